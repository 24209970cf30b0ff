//! `stackscope iperf` against Debian's iperf3 on loopback (the kernel's
//! stack), both ways, and one consumer for both JSONs: every field
//! Debian's `iperf3 -c -J` writes must be in `stackscope iperf -c -J`'s
//! with the same JSON type, and ours may add fields only under
//! `stackscope` (TCP and UDP, `-R`, `-P 2`). Without `iperf3` it prints
//! "skipped: ..." and passes (CI installs it).

use std::collections::BTreeMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_stackscope");

fn iperf3_missing() -> bool {
    !Command::new("sh")
        .args(["-c", "command -v iperf3"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A port nobody listens on now (TCP and UDP).
fn free_port() -> u16 {
    loop {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
            && std::net::TcpListener::bind(("::1", port)).is_ok()
        {
            return port;
        }
    }
}

/// A server process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: kill with a pid we spawned; SIGINT lets ours say goodbye.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGINT);
        }
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(program: &str, args: &[&str], port: u16) -> Server {
    let child = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {program}: {e}"));
    // Ready once it accepts a connection (a bare connect is not a test).
    let began = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{program} never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // iperf3 takes the probe for a client that went away; let it settle.
    std::thread::sleep(Duration::from_millis(300));
    Server(child)
}

fn json_of(what: &str, out: Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{what} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{what}: not JSON ({e}):\n{stdout}"))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every path in `v` (array elements as `[]`) and its type.
fn fields(v: &Value, path: &str, out: &mut BTreeMap<String, &'static str>) {
    out.insert(path.to_string(), kind(v));
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                fields(x, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for x in items {
                fields(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// Strict JSON: no object repeats a key (serde_json keeps the last, so
/// the text is scanned with a map per object).
fn assert_unique_keys(text: &str) {
    let mut de = serde_json::Deserializer::from_str(text);
    let checked: Result<UniqueKeys, _> = serde::Deserialize::deserialize(&mut de);
    checked.unwrap_or_else(|e| panic!("{e}"));
}

struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = UniqueKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<UniqueKeys, A::Error> {
                let mut seen = std::collections::HashSet::new();
                while let Some(k) = m.next_key::<String>()? {
                    if !seen.insert(k.clone()) {
                        return Err(serde::de::Error::custom(format!("key {k} twice")));
                    }
                    m.next_value::<UniqueKeys>()?;
                }
                Ok(UniqueKeys)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<UniqueKeys, A::Error> {
                while s.next_element::<UniqueKeys>()?.is_some() {}
                Ok(UniqueKeys)
            }
            fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
            fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
                Ok(UniqueKeys)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// One consumer for both: every field of Debian's JSON is in ours with
/// its type, and ours adds fields only under `stackscope`.
fn same_fields(theirs: &Value, ours: &Value, case: &str) {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    fields(theirs, "", &mut a);
    fields(ours, "", &mut b);
    for (path, t) in &a {
        assert_eq!(
            b.get(path),
            Some(t),
            "{case}: iperf3's {path} ({t}) in ours? ours: {}",
            serde_json::to_string_pretty(ours).unwrap()
        );
    }
    for path in b.keys() {
        assert!(
            a.contains_key(path) || path.starts_with(".stackscope"),
            "{case}: {path} is ours only, outside .stackscope"
        );
    }
}

#[test]
fn our_json_has_iperf3s_fields_and_both_ends_interoperate() {
    if iperf3_missing() {
        eprintln!("skipped: iperf3 is not installed (Debian package iperf3)");
        return;
    }
    let port = free_port();
    let p = port.to_string();
    let _debian = start("iperf3", &["-s", "-p", &p], port);
    let cases: [&[&str]; 4] = [
        &[],
        &["-u", "-b", "20M"],
        &["-R"],
        &["-u", "-b", "5M", "-R", "-P", "2"],
    ];
    let cases_p2: [&[&str]; 1] = [&["-P", "2"]];
    for extra in cases.iter().chain(cases_p2.iter()) {
        // One second: the fields of a run, intervals included, are what
        // is compared, and each case runs twice (theirs, ours).
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1", "-J"];
        args.extend_from_slice(extra);
        let theirs = json_of(
            &format!("iperf3 {args:?}"),
            Command::new("iperf3").args(&args).output().unwrap(),
        );
        let mut ours_args = vec!["iperf"];
        ours_args.extend_from_slice(&args);
        let out = Command::new(BIN).args(&ours_args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let ours = json_of(&format!("stackscope {ours_args:?}"), out);
        assert_unique_keys(&text);
        same_fields(&theirs, &ours, &format!("{extra:?}"));
        // The figures are the run's: data moved, the protocol named as iperf3 does.
        let proto = if extra.contains(&"-u") { "UDP" } else { "TCP" };
        assert_eq!(ours["start"]["test_start"]["protocol"], proto);
        assert!(
            ours["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0,
            "{extra:?}"
        );
        if proto == "TCP" && !extra.contains(&"-R") {
            let cwnd = ours["intervals"][0]["streams"][0]["snd_cwnd"]
                .as_u64()
                .unwrap();
            assert!(cwnd > 0, "TCP_INFO's cwnd");
        }
    }
    drop(_debian);

    // Our server's -J against Debian's server's, for Debian's client.
    for extra in [
        &[][..],
        &["-u", "-b", "10M"],
        &["-R"],
        &["-P", "2"],
        &["-u", "-R", "-b", "5M"],
    ] {
        let theirs = server_json("iperf3", &[], extra);
        let ours = server_json(BIN, &["iperf"], extra);
        same_fields(&theirs, &ours, &format!("-s -J, client {extra:?}"));
        assert!(ours["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
    }

    // Debian's client against our server: TCP, UDP, -R, -P 2.
    let port = free_port();
    let p = port.to_string();
    let _ours = start(BIN, &["iperf", "-s", "-p", &p], port);
    for extra in [
        &[][..],
        &["-u", "-b", "20M"],
        &["-R"],
        &["-P", "2"],
        &["-u", "-R", "-P", "2", "-b", "5M"],
    ] {
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1", "-J"];
        args.extend_from_slice(extra);
        let v = json_of(
            &format!("iperf3 {args:?}"),
            Command::new("iperf3").args(&args).output().unwrap(),
        );
        let received = v["end"]["sum_received"]["bytes"]
            .as_u64()
            .unwrap_or_else(|| panic!("{extra:?}: no end.sum_received.bytes: {v}"));
        assert!(received > 0, "{extra:?}: nothing received");
        if !extra.contains(&"-u") && !extra.contains(&"-R") {
            // Our receiving server counts until the client's bytes arrive.
            assert_eq!(
                received,
                v["end"]["sum_sent"]["bytes"].as_u64().unwrap(),
                "{extra:?}"
            );
        }
    }
}

/// The JSON a one-test server (`-s -1 -J`) wrote for Debian's client
/// run with `extra`.
fn server_json(program: &str, prefix: &[&str], extra: &[&str]) -> Value {
    let port = free_port();
    let p = port.to_string();
    let mut args: Vec<&str> = prefix.to_vec();
    args.extend_from_slice(&["-s", "-1", "-J", "-p", &p]);
    let server = Command::new(program)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // No probe connection: a one-test iperf3 would take it for its test.
    std::thread::sleep(Duration::from_millis(700));
    let mut client = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1"];
    client.extend_from_slice(extra);
    let out = Command::new("iperf3").args(&client).output().unwrap();
    assert!(
        out.status.success(),
        "iperf3 {client:?} against {program}: {out:?}"
    );
    let out = server.wait_with_output().unwrap();
    json_of(&format!("{program} {args:?} with {extra:?}"), out)
}

/// Two namespaces joined by a veth pair, removed when dropped.
struct Pair {
    a: String,
    b: String,
}

impl Pair {
    fn create() -> Result<Pair, String> {
        let id = std::process::id();
        let pair = Pair {
            a: format!("ssiperf{id}a"),
            b: format!("ssiperf{id}b"),
        };
        let a = pair.a.as_str();
        let b = pair.b.as_str();
        let va = format!("sia{id}");
        let vb = format!("sib{id}");
        for cmd in [
            vec!["netns", "add", a],
            vec!["netns", "add", b],
            vec![
                "link", "add", &va, "netns", a, "type", "veth", "peer", "name", &vb, "netns", b,
            ],
            vec!["-n", a, "addr", "add", "192.0.2.1/24", "dev", &va],
            vec!["-n", a, "link", "set", &va, "up"],
            vec!["-n", a, "link", "set", "lo", "up"],
            vec!["-n", b, "link", "set", &vb, "up"],
        ] {
            let out = Command::new("ip")
                .args(&cmd)
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!(
                    "ip {cmd:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        Ok(pair)
    }

    fn vb(&self) -> String {
        format!("sib{}", std::process::id())
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn our_client_on_the_reference_stack_measures_the_kernels_iperf3_server() {
    if iperf3_missing() {
        eprintln!("skipped: iperf3 is not installed (Debian package iperf3)");
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root (the test makes network namespaces)");
        return;
    }
    let pair = match Pair::create() {
        Ok(pair) => pair,
        Err(why) => {
            eprintln!("skipped: network namespaces are refused here: {why}");
            return;
        }
    };
    let pidfile = std::env::temp_dir().join(format!("ssiperf{}.pid", std::process::id()));
    let pid = pidfile.to_str().unwrap();
    let started = Command::new("ip")
        .args(["netns", "exec", &pair.a, "iperf3", "-s", "-D", "-I", pid])
        .status()
        .unwrap();
    assert!(started.success());
    std::thread::sleep(Duration::from_millis(500));
    let vb = pair.vb();
    for extra in [
        &["-t", "2"][..],
        &["-t", "2", "-u", "-b", "20M", "-R", "-P", "2"],
    ] {
        let mut args = vec![
            "netns",
            "exec",
            &pair.b,
            BIN,
            "iperf",
            "-c",
            "192.0.2.1",
            "-J",
            "--stack",
            "ref",
            "--link",
            "packet",
            "--iface",
            &vb,
            "--addr",
            "192.0.2.2/24",
        ];
        args.extend_from_slice(extra);
        let v = json_of(
            &format!("{args:?}"),
            Command::new("ip").args(&args).output().unwrap(),
        );
        assert_eq!(v["stackscope"]["stack"], "ref");
        assert!(
            v["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0,
            "{extra:?}"
        );
        if !extra.contains(&"-u") {
            // cwnd and RTT from the reference stack's connection.
            let s = &v["intervals"][0]["streams"][0];
            assert!(s["snd_cwnd"].as_u64().unwrap() > 0, "{s}");
            assert!(
                v["end"]["streams"][0]["sender"]["max_rtt"]
                    .as_u64()
                    .unwrap()
                    > 0
            );
        }
    }
    if let Ok(text) = std::fs::read_to_string(&pidfile) {
        if let Ok(pid) = text.trim().parse::<i32>() {
            // SAFETY: the daemon this test started, by its pid file.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }
    let _ = std::fs::remove_file(&pidfile);
    drop(pair);
}
