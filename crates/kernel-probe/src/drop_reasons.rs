//! The kernel's drop reasons by name: `kernel.kfree_skb` records carry
//! `enum skb_drop_reason` as a number, whose values change between kernel
//! versions, so the names are read from the running kernel's BTF
//! (`/sys/kernel/btf/vmlinux`) at run time, never from a table of ours.
//! aya's BTF type keeps its enum members private, so this reads the BTF
//! format (Documentation/bpf/btf.rst) itself: a header, the type section
//! (each type a 12-byte `struct btf_type` and its kind's trailing data),
//! the string section.

use std::collections::BTreeMap;

const MAGIC: u16 = 0xeb9f;
const ENUM: u32 = 6;
const ENUM64: u32 = 19;
/// The enum's name, and the prefix its members share.
const DROP_REASON_ENUM: &str = "skb_drop_reason";
const PREFIX: &str = "SKB_DROP_REASON_";

/// Drop reason numbers and their names (without `SKB_DROP_REASON_`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DropReasons {
    names: BTreeMap<u32, String>,
}

impl DropReasons {
    /// Reads them from the running kernel's BTF; the error says why not.
    pub fn from_kernel() -> Result<DropReasons, String> {
        let path = "/sys/kernel/btf/vmlinux";
        let btf = std::fs::read(path).map_err(|e| format!("read {path}: {e}"))?;
        DropReasons::from_btf(&btf)
    }

    /// From raw BTF (little-endian, as the kernel exports it).
    pub fn from_btf(btf: &[u8]) -> Result<DropReasons, String> {
        let members = enum_members(btf, DROP_REASON_ENUM)?
            .ok_or_else(|| format!("the kernel's BTF has no enum {DROP_REASON_ENUM}"))?;
        let names = members
            .into_iter()
            .filter_map(|(name, value)| {
                let value = u32::try_from(value).ok()?;
                Some((
                    value,
                    name.strip_prefix(PREFIX).unwrap_or(&name).to_string(),
                ))
            })
            .collect();
        Ok(DropReasons { names })
    }

    /// The name of reason `value` (`NO_SOCKET`), or `reason N` if the
    /// kernel has none by that number.
    pub fn name(&self, value: u32) -> String {
        self.names
            .get(&value)
            .cloned()
            .unwrap_or_else(|| format!("reason {value}"))
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| format!("BTF cut short at byte {at}"))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| format!("BTF cut short at byte {at}"))
}

fn string_at(strings: &[u8], offset: u32) -> Result<String, String> {
    let from = offset as usize;
    let rest = strings
        .get(from..)
        .ok_or_else(|| format!("BTF string offset {offset} out of range"))?;
    let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
    Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Bytes that follow a type's 12-byte header, by kind (btf.rst §2.2).
fn trailing(kind: u32, vlen: usize) -> Result<usize, String> {
    Ok(match kind {
        // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG
        2 | 7..=12 | 16 | 18 => 0,
        // INT, VAR, DECL_TAG: one u32
        1 | 14 | 17 => 4,
        // ARRAY
        3 => 12,
        // STRUCT, UNION: members of 12 bytes; DATASEC: 12-byte entries
        4 | 5 | 15 => 12 * vlen,
        // ENUM: 8-byte members; FUNC_PROTO: 8-byte parameters
        6 | 13 => 8 * vlen,
        // ENUM64: 12-byte members
        19 => 12 * vlen,
        other => return Err(format!("BTF type kind {other} unknown")),
    })
}

/// The members (name, value) of the enum named `name`, or `None` if the
/// BTF has none by that name.
fn enum_members(btf: &[u8], name: &str) -> Result<Option<Vec<(String, u64)>>, String> {
    if u16_at(btf, 0)? != MAGIC {
        return Err("not BTF (bad magic)".into());
    }
    let header = u32_at(btf, 4)? as usize;
    let (type_off, type_len) = (u32_at(btf, 8)? as usize, u32_at(btf, 12)? as usize);
    let (str_off, str_len) = (u32_at(btf, 16)? as usize, u32_at(btf, 20)? as usize);
    let section = |off: usize, len: usize| {
        header
            .checked_add(off)
            .and_then(|from| Some(from..from.checked_add(len)?))
            .and_then(|range| btf.get(range))
            .ok_or_else(|| "BTF section out of range".to_string())
    };
    let types = section(type_off, type_len)?;
    let strings = section(str_off, str_len)?;
    let mut at = 0;
    while at < types.len() {
        let name_off = u32_at(types, at)?;
        let info = u32_at(types, at + 4)?;
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let body = at + 12;
        let next = body + trailing(kind, vlen)?;
        if (kind == ENUM || kind == ENUM64) && string_at(strings, name_off)? == name {
            let signed = info >> 31 == 1;
            let mut members = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let value = if kind == ENUM {
                    let m = body + 8 * i;
                    let v = u32_at(types, m + 4)?;
                    // A signed enum's negative member has no reason number.
                    if signed && (v as i32) < 0 {
                        continue;
                    }
                    (u64::from(v), m)
                } else {
                    let m = body + 12 * i;
                    let lo = u64::from(u32_at(types, m + 4)?);
                    let hi = u64::from(u32_at(types, m + 8)?);
                    (hi << 32 | lo, m)
                };
                members.push((string_at(strings, u32_at(types, value.1)?)?, value.0));
            }
            return Ok(Some(members));
        }
        at = next;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BTF with an INT, a STRUCT of one member, and the enum.
    fn sample() -> Vec<u8> {
        let strings =
            b"\0int\0s\0m\0skb_drop_reason\0SKB_NOT_DROPPED_YET\0SKB_DROP_REASON_NO_SOCKET\0";
        let at = |s: &str| {
            strings
                .windows(s.len() + 1)
                .position(|w| &w[..s.len()] == s.as_bytes() && w[s.len()] == 0)
                .unwrap() as u32
        };
        let mut types = Vec::new();
        let mut push = |words: &[u32]| {
            for w in words {
                types.extend_from_slice(&w.to_le_bytes());
            }
        };
        // INT "int": header and its u32.
        push(&[at("int"), 1 << 24, 4, 32]);
        // STRUCT "s", one member.
        push(&[at("s"), 4 << 24 | 1, 4, at("m"), 1, 0]);
        // ENUM skb_drop_reason, two members.
        push(&[at("skb_drop_reason"), 6 << 24 | 2, 4]);
        push(&[at("SKB_NOT_DROPPED_YET"), 0]);
        push(&[at("SKB_DROP_REASON_NO_SOCKET"), 3]);
        let mut btf = Vec::new();
        btf.extend_from_slice(&MAGIC.to_le_bytes());
        btf.extend_from_slice(&[1, 0]);
        for w in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            btf.extend_from_slice(&w.to_le_bytes());
        }
        btf.extend_from_slice(&types);
        btf.extend_from_slice(strings);
        btf
    }

    #[test]
    fn reads_the_enum_past_other_types() {
        let reasons = DropReasons::from_btf(&sample()).unwrap();
        assert_eq!(reasons.name(3), "NO_SOCKET");
        assert_eq!(reasons.name(0), "SKB_NOT_DROPPED_YET");
        assert_eq!(reasons.name(99), "reason 99");
    }

    #[test]
    fn damaged_btf_is_an_error_not_a_panic() {
        let btf = sample();
        for cut in [0, 3, 20, 30, btf.len() - 10] {
            assert!(DropReasons::from_btf(&btf[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = btf.clone();
        bad[0] = 0;
        assert!(DropReasons::from_btf(&bad).is_err());
    }
}
