//! The machine a run was measured on, for the report's table: what the
//! environment detection knows, plus memory and load from `/proc`.

use report::model::Machine;

/// Reads the machine's facts now; what cannot be read is `None`.
pub fn detect() -> Machine {
    let env = traffic::env::Environment::detect(
        traffic::spec::StackKind::Ref,
        "reference stack on the threaded runner",
    );
    let known = |s: String| (!s.trim().is_empty() && s != "unknown").then_some(s);
    Machine {
        cpu_model: known(env.cpu_model),
        cores: Some(env.cpus),
        memory_bytes: std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| mem_total(&t)),
        kernel: known(env.kernel),
        load_average: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| load_average(&t)),
        stackscope_version: Some(env.stackscope_version.to_string()),
    }
}

/// `MemTotal:  16318412 kB` in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The first three fields of `/proc/loadavg`.
fn load_average(loadavg: &str) -> Option<[f64; 3]> {
    let mut fields = loadavg.split_whitespace().map(|f| f.parse::<f64>().ok());
    let mut next = || {
        fields
            .next()
            .flatten()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    Some([next()?, next()?, next()?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse_and_garbage_is_none() {
        assert_eq!(
            mem_total("MemTotal:       16318412 kB\nMemFree: 1 kB\n"),
            Some(16_318_412 * 1024)
        );
        assert_eq!(mem_total("nothing"), None);
        assert_eq!(
            load_average("0.52 0.58 0.59 1/123 4567\n"),
            Some([0.52, 0.58, 0.59])
        );
        assert_eq!(load_average("0.5 x"), None);
        assert_eq!(load_average(""), None);
    }
}
