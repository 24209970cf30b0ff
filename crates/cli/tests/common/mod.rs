//! What the binary's end-to-end tests share: running `stackscope` and
//! reading its JSON.

use std::process::{Command, Output};

use serde_json::Value;

/// Runs the binary under test with `args`.
pub fn stackscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stackscope"))
        .args(args)
        .output()
        .expect("run stackscope")
}

/// Its stdout as JSON, after checking that it succeeded and that no
/// object repeats a key (serde_json keeps the last; strict parsers and
/// iperf3's consumers refuse).
pub fn stdout_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "stackscope failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut de = serde_json::Deserializer::from_slice(&output.stdout);
    if let Err(e) = serde::Deserializer::deserialize_any(&mut de, UniqueKeys) {
        panic!("stdout is not JSON with unique keys: {e}");
    }
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

/// Walks a JSON document and fails on an object that repeats a key.
struct UniqueKeys;

impl<'de> serde::de::Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(UniqueKeys)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("key {key:?} twice")));
            }
            map.next_value_seed(UniqueKeys)?;
        }
        Ok(())
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for UniqueKeys {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}
