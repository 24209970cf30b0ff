//! Where our figure is: a path into an experiment as `summary.json` holds
//! it, e.g. `runs[id=tcp]/send/start/a` or
//! `sweeps[id=throughput]/points[stack=ref,protocol=tcp,size_bytes=16]/mean_bps`.
//!
//! A segment is an object key, an array index, or a key followed by a
//! selector in brackets that keeps the array's elements whose fields match
//! (`field=value`, `field^=prefix`, several joined by `,`; `*` keeps
//! every element). Numbers compare as numbers, so `size=16` matches 16.0.

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Segment {
    pub key: String,
    pub select: Option<Select>,
}

/// Which elements of an array a segment keeps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Select {
    All,
    Where(Vec<Condition>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    pub field: String,
    pub value: String,
    /// `^=`: the field's text starts with `value`.
    pub prefix: bool,
}

/// A value the path reached and the object that holds it (whose other
/// fields are its siblings: a mean's interval, a point's stdev).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found<'a> {
    pub value: &'a Value,
    pub parent: Option<&'a Value>,
}

/// Parses `a/b[x=1,y^=z]/c`. Brackets may hold `/` (a selector's value).
pub(crate) fn parse(path: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let bytes: Vec<char> = path.chars().collect();
    let mut pieces = Vec::new();
    for (i, c) in bytes.iter().enumerate() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or(format!("unbalanced ] in {path:?}"))?
            }
            '/' if depth == 0 => {
                pieces.push(bytes[start..i].iter().collect::<String>());
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced [ in {path:?}"));
    }
    pieces.push(bytes[start..].iter().collect::<String>());
    for piece in pieces {
        segments.push(segment(&piece).map_err(|e| format!("{path:?}: {e}"))?);
    }
    Ok(segments)
}

fn segment(piece: &str) -> Result<Segment, String> {
    let (key, select) = match piece.find('[') {
        None => (piece, None),
        Some(open) => {
            let inner = piece[open + 1..]
                .strip_suffix(']')
                .ok_or(format!("segment {piece:?} does not end in ]"))?;
            (&piece[..open], Some(selector(inner)?))
        }
    };
    if key.is_empty() {
        return Err(format!("empty segment {piece:?}"));
    }
    Ok(Segment {
        key: key.to_string(),
        select,
    })
}

fn selector(inner: &str) -> Result<Select, String> {
    if inner.trim() == "*" {
        return Ok(Select::All);
    }
    let mut conditions = Vec::new();
    for part in inner.split(',') {
        let (field, value, prefix) = if let Some((f, v)) = part.split_once("^=") {
            (f, v, true)
        } else if let Some((f, v)) = part.split_once('=') {
            (f, v, false)
        } else {
            return Err(format!("selector {part:?} is not field=value"));
        };
        if field.trim().is_empty() {
            return Err(format!("selector {part:?} names no field"));
        }
        conditions.push(Condition {
            field: field.trim().to_string(),
            value: value.trim().to_string(),
            prefix,
        });
    }
    Ok(Select::Where(conditions))
}

/// Whether `value` (a field of an element) satisfies `c`.
fn matches(value: &Value, c: &Condition) -> bool {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    };
    if c.prefix {
        return text.starts_with(&c.value);
    }
    match (value.as_f64(), c.value.parse::<f64>()) {
        (Some(a), Ok(b)) => a == b,
        _ => text == c.value,
    }
}

/// Every value the path reaches from `root`. An error names the first
/// segment that does not exist (a key that is not there, an index out of
/// range, a selector on something that is not an array); a selector that
/// keeps no element gives no value and no error.
pub(crate) fn walk<'a>(root: &'a Value, segments: &[Segment]) -> Result<Vec<Found<'a>>, String> {
    let mut found = vec![Found {
        value: root,
        parent: None,
    }];
    for (i, seg) in segments.iter().enumerate() {
        let mut next = Vec::new();
        for f in &found {
            let child = child(f.value, &seg.key).ok_or_else(|| {
                format!(
                    "no {:?} at {}",
                    seg.key,
                    if i == 0 {
                        "the top".to_string()
                    } else {
                        describe(&segments[..i])
                    }
                )
            })?;
            match &seg.select {
                None => next.push(Found {
                    value: child,
                    parent: Some(f.value),
                }),
                Some(select) => {
                    let items = child.as_array().ok_or_else(|| {
                        format!("{} is not a list to select from", describe(&segments[..=i]))
                    })?;
                    for item in items {
                        let keep = match select {
                            Select::All => true,
                            Select::Where(conditions) => conditions
                                .iter()
                                .all(|c| item.get(&c.field).is_some_and(|v| matches(v, c))),
                        };
                        if keep {
                            next.push(Found {
                                value: item,
                                parent: Some(child),
                            });
                        }
                    }
                }
            }
        }
        found = next;
    }
    Ok(found)
}

fn child<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map.get(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

fn describe(segments: &[Segment]) -> String {
    segments
        .iter()
        .map(|s| s.key.as_str())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_indices_and_selectors() {
        let v = json!({"runs": [{"id": "tcp", "send": {"a": 1.5}, "c": {"checksum": [10.0, 0.25]}},
                                {"id": "udp", "send": {"a": 2.5}}],
                       "points": [{"size": 16, "x": 1}, {"size": 16.0, "x": 2}, {"size": 32, "x": 3}]});
        let one = |p: &str| {
            let found = walk(&v, &parse(p).unwrap()).unwrap();
            assert_eq!(found.len(), 1, "{p}");
            found[0].value.clone()
        };
        assert_eq!(one("runs[id=udp]/send/a"), json!(2.5));
        assert_eq!(one("runs[id=tcp]/c/checksum/1"), json!(0.25));
        assert_eq!(one("runs[id^=tc]/send/a"), json!(1.5));
        let sixteen = walk(&v, &parse("points[size=16]/x").unwrap()).unwrap();
        assert_eq!(sixteen.len(), 2, "16 and 16.0 are the same size");
        assert_eq!(walk(&v, &parse("points[*]/x").unwrap()).unwrap().len(), 3);
        assert!(walk(&v, &parse("runs[id=xtp]/send/a").unwrap())
            .unwrap()
            .is_empty());
        assert!(walk(&v, &parse("runs[id=tcp]/recv/a").unwrap()).is_err());
        assert!(walk(&v, &parse("runs/9").unwrap()).is_err());
        assert!(walk(&v, &parse("runs[id=tcp]/send[x=1]").unwrap()).is_err());
    }

    #[test]
    fn slashes_inside_brackets_and_bad_paths() {
        let segs = parse("t[c^=protocol output (tcp.output / udp.output)]/x").unwrap();
        assert_eq!(segs.len(), 2);
        for bad in ["a[", "a]", "a[b]", "/a", "a//b", "a[=1]"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
