//! How the elements of an array of objects are told apart, so that two
//! summaries' arrays pair element by element whatever their order.

use std::collections::HashMap;

use serde_json::Value;

/// Fields that name an array element, in order of preference: names
/// first, then (after a sweep point's configuration) measured positions.
const NAMES: &[&str] = &["id", "name", "label", "queue", "category", "path"];
const POSITIONS: &[&str] = &["size", "size_bytes", "x", "multiple", "lo"];

/// The configuration of a sweep point: together they name it (its `point`
/// number depends on the grid's order).
const CONFIGURATION: &[&str] = &[
    "stack",
    "protocol",
    "family",
    "size_bytes",
    "sockbuf_bytes",
    "rate_bps",
    "circuits",
    "load_procs",
    "load_on",
    "mtu_bytes",
];

/// How the elements of an array of objects are told apart.
pub struct Identity {
    /// The fields whose values together name an element.
    fields: Vec<&'static str>,
    /// Those its label shows (for a configuration, the ones that vary).
    shown: Vec<&'static str>,
    /// A name that repeats (a call tree's `data.copy` under two parents):
    /// each element is its name's k-th occurrence, `data.copy#2`.
    numbered: bool,
}

impl Identity {
    /// The identity both arrays share — a name, else a sweep point's
    /// configuration, else a position such as the size — present in every
    /// element and unique within each side, else a repeating name
    /// numbered by occurrence; `None` when there is none and the elements
    /// pair by position.
    pub fn of(a: &[Value], b: &[Value], dirs: &[Vec<String>; 2]) -> Option<Identity> {
        let objects = |v: &[Value]| v.iter().all(Value::is_object);
        if a.is_empty() || !objects(a) || !objects(b) {
            return None;
        }
        let both: Vec<&Value> = a.iter().chain(b).collect();
        let present_in_all = |field: &&&'static str| {
            both.iter()
                .all(|item| item.get(**field).is_some_and(is_scalar))
        };
        let unique = |id: &Identity| {
            [(a, &dirs[0]), (b, &dirs[1])].iter().all(|(items, dirs)| {
                let mut keys = id.keys(items, dirs);
                keys.sort();
                keys.windows(2).all(|w| w[0] != w[1])
            })
        };
        let single = |fields: &[&'static str]| {
            fields.iter().filter(present_in_all).find_map(|field| {
                let id = Identity {
                    fields: vec![*field],
                    shown: vec![*field],
                    numbered: false,
                };
                unique(&id).then_some(id)
            })
        };
        if let Some(id) = single(NAMES) {
            return Some(id);
        }
        // A sweep point's whole configuration before its size: the size
        // alone may repeat across stacks and protocols.
        let configured = both.iter().all(|item| {
            CONFIGURATION
                .iter()
                .filter(|f| item.get(**f).is_some_and(is_scalar))
                .count()
                >= 2
        });
        if configured {
            let fields: Vec<&'static str> = CONFIGURATION
                .iter()
                .copied()
                .filter(|f| both.iter().any(|item| item.get(*f).is_some()))
                .collect();
            let varying: Vec<&'static str> = fields
                .iter()
                .copied()
                .filter(|f| both.iter().any(|item| item.get(*f) != both[0].get(*f)))
                .collect();
            let shown = if varying.is_empty() {
                fields.clone()
            } else {
                varying
            };
            let id = Identity {
                fields,
                shown,
                numbered: false,
            };
            if unique(&id) {
                return Some(id);
            }
        }
        single(POSITIONS).or_else(|| {
            NAMES.iter().find(present_in_all).map(|field| Identity {
                fields: vec![*field],
                shown: vec![*field],
                numbered: true,
            })
        })
    }

    /// Each element's key, in order.
    pub fn keys(&self, items: &[Value], dirs: &[String]) -> Vec<String> {
        let keys = items
            .iter()
            .map(|item| self.text(item, &self.fields, dirs))
            .collect();
        self.number(keys)
    }

    /// Each element's label, in order: `tcp` for a name, `size=500` for a
    /// position, `stack=ref,size_bytes=16` for a configuration.
    pub fn labels(&self, items: &[Value], dirs: &[String]) -> Vec<String> {
        let labels = items.iter().map(|item| self.label(item, dirs)).collect();
        self.number(labels)
    }

    /// `name#k` for the k-th of a repeating name, when numbered.
    fn number(&self, texts: Vec<String>) -> Vec<String> {
        if !self.numbered {
            return texts;
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        texts
            .into_iter()
            .map(|t| {
                let k = seen.entry(t.clone()).or_insert(0);
                *k += 1;
                format!("{t}#{k}")
            })
            .collect()
    }

    fn label(&self, item: &Value, dirs: &[String]) -> String {
        match (self.shown.as_slice(), item.get(self.fields[0])) {
            ([_], Some(Value::String(_))) => self.text(item, &self.shown, dirs),
            _ => self
                .shown
                .iter()
                .map(|f| format!("{f}={}", scalar_key(item.get(*f), dirs)))
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    fn text(&self, item: &Value, fields: &[&str], dirs: &[String]) -> String {
        fields
            .iter()
            .map(|f| scalar_key(item.get(*f), dirs))
            .collect::<Vec<_>>()
            .join("\u{1f}")
    }

    /// The element without its identity: equal by construction, so no
    /// figure to compare.
    pub fn strip(&self, item: &Value) -> Value {
        match item {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| !self.fields.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(
        v,
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null
    )
}

/// An identity value as text; a path under the side's directory relative
/// to it.
fn scalar_key(v: Option<&Value>, dirs: &[String]) -> String {
    match v {
        Some(Value::String(s)) => dirs
            .iter()
            .find_map(|d| s.strip_prefix(d.as_str()))
            .map(|rest| rest.trim_start_matches('/').to_string())
            .unwrap_or_else(|| s.clone()),
        Some(Value::Null) | None => "-".to_string(),
        Some(other) => other.to_string(),
    }
}
