//! Recipe parsing: good recipes expand, bad ones name file, line and key.

use super::*;
use traffic::kernel::KernelPath;
use traffic::spec::StackKind;
use traffic::sweep::load::LoadOn;

const GOOD: &str = r#"
name = "t"
title = "T"
source = "000_x.txt"

[[run]]
id = "tcp"
kind = "messages"
protocol = "tcp"
link = "fast-ethernet"
sizes = "100..1000:100"
reps = 2
"#;

fn error(text: &str) -> RecipeError {
    parse("exp.toml", text).unwrap_err()
}

#[test]
fn a_good_recipe_expands_its_sweep() {
    let r = parse("exp.toml", GOOD).unwrap();
    let run = &r.runs[0];
    assert_eq!(run.link, Link::FastEthernet);
    let Plan::Messages(m) = &run.plan else {
        panic!("not a messages plan")
    };
    assert_eq!(m.sizes, (1..=10).map(|i| i * 100).collect::<Vec<_>>());
    assert_eq!(m.quick_sizes, m.sizes);
    assert_eq!((m.reps, m.quick_reps, m.warmup), (2, 1, 0));
    assert_eq!(m.family, Family::V6);
}

#[test]
fn an_unknown_key_is_named_with_its_line() {
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nrepz = 3"));
    assert_eq!((e.file.as_str(), e.line), ("exp.toml", 13));
    assert!(e.message.contains("repz"), "{e}");
    assert!(e.to_string().starts_with("exp.toml:13:"), "{e}");
}

#[test]
fn an_impossible_sweep_is_refused_at_its_key() {
    let e = error(&GOOD.replace("100..1000:100", "1000..100:100"));
    assert_eq!(e.line, 11);
    assert!(e.message.contains("backwards"), "{e}");
    let e = error(&GOOD.replace("100..1000:100", "0..1000:100"));
    assert!(e.message.contains("0 bytes"), "{e}");
    let e = error(&GOOD.replace("100..1000:100", "100,20000000"));
    assert!(e.message.contains("largest"), "{e}");
    let e = error(&GOOD.replace("reps = 2", "reps = 0"));
    assert_eq!(e.line, 12);
    let e = error(
        &GOOD
            .replace("100..1000:100", "1..60000")
            .replace("reps = 2", "reps = 2000"),
    );
    assert!(e.message.contains("at most"), "{e}");
}

#[test]
fn bad_names_and_values_say_what_is_allowed() {
    let e = error(&GOOD.replace("\"fast-ethernet\"", "\"token-ring\""));
    assert!(
        e.message.contains("ethernet, fast-ethernet, unlimited"),
        "{e}"
    );
    assert_eq!(e.line, 10);
    let e = error(&GOOD.replace("\"tcp\"\nlink", "\"raw\"\nlink"));
    assert!(e.message.contains("tcp, udp, xtp"), "{e}");
    let e = error(&GOOD.replace("name = \"t\"", "name = \"../x\""));
    assert!(e.message.contains("names files"), "{e}");
    let e = error(&format!("{GOOD}\n[[run]]\nid = \"tcp\"\nkind = \"messages\"\nprotocol = \"udp\"\nlink = \"unlimited\"\nsizes = \"100\"\n"));
    assert!(e.message.contains("used twice"), "{e}");
}

#[test]
fn xtp_messages_are_a_stream_that_can_stop_at_the_acknowledgement() {
    let xtp = GOOD
        .replace("\"tcp\"\nlink", "\"xtp\"\nfamily = \"ipv4\"\nlink")
        .replace("reps = 2", "reps = 2\nstop = \"acknowledged\"");
    let r = parse("exp.toml", &xtp).unwrap();
    let Plan::Messages(m) = &r.runs[0].plan else {
        panic!("not a messages plan")
    };
    assert_eq!((m.protocol, m.family), (Protocol::Xtp, Family::V4));
    assert_eq!(m.stop, StopAt::Acknowledged);
    // A datagram is acknowledged by nothing.
    let e = error(&xtp.replace("\"xtp\"", "\"udp\""));
    assert!(e.message.contains("tcp or xtp"), "{e}");
}

#[test]
fn udp_over_ipv4_stops_at_its_largest_datagram() {
    let e = error(
        &GOOD
            .replace("\"tcp\"\nlink", "\"udp\"\nfamily = \"ipv4\"\nlink")
            .replace("100..1000:100", "65520"),
    );
    assert!(e.message.contains("65507"), "{e}");
}

#[test]
fn the_lab_recipes_parse() {
    for (file, text) in crate::experiment::LAB_RECIPES {
        parse(file, text).unwrap();
    }
}

proptest::proptest! {
    #[test]
    fn no_text_makes_the_parser_panic(text in "\\PC{0,400}") {
        let _ = parse("fuzz.toml", &text);
    }

    #[test]
    fn no_line_of_a_good_recipe_breaks_it_into_a_panic(cut in 0usize..GOOD.len(), junk in "[ -~]{0,12}") {
        let mut text = GOOD.to_string();
        if text.is_char_boundary(cut) {
            text.insert_str(cut, &junk);
        }
        let _ = parse("fuzz.toml", &text);
    }
}

const SWEEP: &str = r#"
name = "s"
title = "S"
source = "002_x.txt"

[[run]]
id = "tput"
kind = "throughput"
stacks = "ref,kernel"
protocols = "tcp,udp"
families = "ipv4,ipv6"
link = "unlimited"
sizes = "16,1K..4K:1K"
quick_sizes = "16"
sockbufs = "4K,64K"
total = "2M"
quick_total = "256K"
reps = 3
"#;

fn sweep_plan(text: &str) -> SweepPlan {
    match &parse("s.toml", text).unwrap().runs[0].plan {
        Plan::Sweep(plan) => (**plan).clone(),
        _ => panic!("not a sweep plan"),
    }
}

#[test]
fn a_sweep_run_expands_full_and_quick_grids() {
    let plan = sweep_plan(SWEEP);
    assert_eq!(plan.full.sizes, [16, 1024, 2048, 3072, 4096]);
    assert_eq!(plan.quick.sizes, [16]);
    assert_eq!(plan.full.sockbufs, [4096, 65536]);
    assert_eq!(plan.full.amount, traffic::sweep::Amount::Total(2 << 20));
    assert_eq!(plan.quick.amount, traffic::sweep::Amount::Total(256 << 10));
    assert_eq!((plan.target.min_reps, plan.quick_target.min_reps), (3, 3));
    // Two sockbufs and one size: the plot runs along the buffer size.
    assert_eq!(plan.x, XAxis::Sockbuf);
    // 2 stacks × 2 protocols × 2 families × 2 buffers × 5 sizes.
    let points = plan
        .full
        .points(traffic::kernel::KernelPath::Loopback)
        .unwrap();
    assert_eq!(points.len(), 80);
}

#[test]
fn a_key_of_another_kind_is_refused_at_its_line() {
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nwarmup = 2"));
    assert_eq!(e.line, 19);
    assert!(e.message.contains("`warmup` does not apply"), "{e}");
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nstacks = \"ref\""));
    assert_eq!(e.line, 13);
    assert!(e.message.contains("stacks"), "{e}");
    let e = error(&SWEEP.replace(
        "protocols = \"tcp,udp\"",
        "protocols = \"tcp\"\nmix = \"tcp,udp\"",
    ));
    assert!(e.message.contains("not both"), "{e}");
}

#[test]
fn an_impossible_point_is_refused_before_anything_runs() {
    // Raw frames stop at the 1500-byte MTU.
    let e = error(&SWEEP.replace("\"tcp,udp\"", "\"raw\""));
    assert_eq!(e.line, 13, "{e}");
    assert!(e.message.contains("raw"), "{e}");
    let e = error(&SWEEP.replace("\"ref,kernel\"", "\"ref,bsd\""));
    assert!(e.message.contains("kernel, ref"), "{e}");
    assert_eq!(e.line, 9);
    let e = error(&SWEEP.replace("total = \"2M\"", "total = \"0\""));
    assert!(e.message.contains("at least 1 byte"), "{e}");
    let e = error(&SWEEP.replace("total = \"2M\"", "count = 0"));
    assert!(e.message.contains("count = 0"), "{e}");
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\npredict = \"magic\""));
    assert!(e.message.contains("header-cost"), "{e}");
}

#[test]
fn rates_put_the_offered_load_on_the_x_axis() {
    let plan = sweep_plan(
        &SWEEP
            .replace("\"tcp,udp\"", "\"udp\"")
            .replace("sockbufs = \"4K,64K\"", "rates = \"10M..30M:10M\""),
    );
    assert_eq!(plan.full.rates, [10_000_000, 20_000_000, 30_000_000]);
    assert_eq!(plan.x, XAxis::Rate);
}

#[test]
fn throughput_points_last_a_minimum_duration_shorter_in_quick_mode() {
    use std::time::Duration;
    let plan = sweep_plan(SWEEP);
    assert_eq!(plan.full.min_duration, Some(Duration::from_secs(1)));
    assert_eq!(plan.quick.min_duration, Some(Duration::from_millis(100)));
    let plan = sweep_plan(&SWEEP.replace(
        "reps = 3",
        "reps = 3\nmin_duration = 2.5\nquick_min_duration = 0",
    ));
    assert_eq!(plan.full.min_duration, Some(Duration::from_millis(2500)));
    assert_eq!(plan.quick.min_duration, None, "0 turns it off");
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nmin_duration = -1.0"));
    assert_eq!(e.line, 19, "{e}");
    assert!(e.message.contains("min_duration"), "{e}");
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nmin_duration = 1.0"));
    assert!(e.message.contains("min_duration"), "{e}");
}

#[test]
fn a_citation_is_carried_and_a_blank_one_refused() {
    let cited = GOOD.replace(
        "source = \"000_x.txt\"",
        "source = \"000_x.txt\"\ncitation = \"Author, A. (1999). A Title.\"",
    );
    assert_eq!(
        parse("exp.toml", &cited).unwrap().citation,
        "Author, A. (1999). A Title."
    );
    assert_eq!(parse("exp.toml", GOOD).unwrap().citation, "");
    let e = error(&cited.replace("Author, A. (1999). A Title.", "  "));
    assert_eq!(e.line, 5);
    assert!(e.message.contains("citation"), "{e}");
}

#[test]
fn the_lab_recipes_cite_their_studies() {
    for (file, text) in crate::experiment::LAB_RECIPES {
        let r = parse(file, text).unwrap();
        assert!(
            r.citation.contains("(19") && r.citation.len() > 40,
            "{file}: {}",
            r.citation
        );
    }
}

#[test]
fn repetition_keys_set_the_target_and_the_caps_full_and_quick() {
    use std::time::Duration;
    // Defaults: ±2 %, at least 3, at most 30 reps or 5 s; quick 10 reps
    // or 0.5 s at the same target.
    let plan = sweep_plan(SWEEP);
    assert_eq!(plan.target.relative, 0.02);
    assert_eq!((plan.target.min_reps, plan.target.max_reps), (3, 30));
    assert_eq!(plan.target.max_time, Duration::from_secs(5));
    assert_eq!(plan.quick_target.relative, 0.02);
    assert_eq!(plan.quick_target.max_reps, 10);
    assert_eq!(plan.quick_target.max_time, Duration::from_millis(500));
    let plan = sweep_plan(&SWEEP.replace(
        "reps = 3",
        "reps = 4\nquick_reps = 2\nci_target = 1\nquick_ci_target = 5.5\n\
         max_reps = 50\nquick_max_reps = 6\nmax_time = 90\nquick_max_time = 1.5",
    ));
    assert_eq!(plan.target.relative, 0.01);
    assert_eq!((plan.target.min_reps, plan.target.max_reps), (4, 50));
    assert_eq!(plan.target.max_time, Duration::from_secs(90));
    assert_eq!(plan.quick_target.relative, 0.055);
    assert_eq!(
        (plan.quick_target.min_reps, plan.quick_target.max_reps),
        (2, 6)
    );
    assert_eq!(plan.quick_target.max_time, Duration::from_millis(1500));
    // The quick target follows the full one unless given.
    let plan = sweep_plan(&SWEEP.replace("reps = 3", "reps = 3\nci_target = 4"));
    assert_eq!(plan.quick_target.relative, 0.04);
    // A minimum above the default cap raises the cap.
    let plan = sweep_plan(&SWEEP.replace("reps = 3", "reps = 40"));
    assert_eq!(plan.target.max_reps, 40);
}

#[test]
fn bad_repetition_keys_are_refused_at_their_line() {
    let bad = |key: &str| error(&SWEEP.replace("reps = 3", &format!("reps = 3\n{key}")));
    // A fraction meant as a percentage.
    let e = bad("ci_target = 0.02");
    assert_eq!(e.line, 19, "{e}");
    assert!(
        e.message.contains("in percent") && e.message.contains("not 0.02"),
        "{e}"
    );
    assert!(bad("quick_ci_target = 0")
        .message
        .contains("quick_ci_target"));
    assert!(bad("ci_target = 150").message.contains("ci_target = 150"));
    let e = bad("max_reps = 2");
    assert!(e.message.contains("at least reps (3)"), "{e}");
    assert!(bad("max_reps = 5000").message.contains("at most 1000"));
    assert!(bad("quick_max_reps = 0").message.contains("quick_max_reps"));
    assert!(bad("max_time = 0").message.contains("max_time = 0"));
    assert!(bad("quick_max_time = -1.0")
        .message
        .contains("quick_max_time"));
    assert!(bad("max_time = nan").message.contains("max_time"));
    let e = bad("ci_target = \"2%\"");
    assert!(e.message.contains("invalid type"), "{e}");
    // And a messages run has no such keys.
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nci_target = 2"));
    assert!(e.message.contains("`ci_target` does not apply"), "{e}");
}

#[test]
fn fragmentation_is_a_messages_key_with_two_modes() {
    use stack::iface::host::Fragmentation;
    let plan = |text: &str| {
        let r = parse("exp.toml", text).unwrap();
        let Plan::Messages(m) = &r.runs[0].plan else {
            panic!("not a messages plan")
        };
        m.fragmentation
    };
    assert_eq!(plan(GOOD), Fragmentation::ScatterGather);
    let copy = GOOD.replace("reps = 2", "reps = 2\nfragmentation = \"copy\"");
    assert_eq!(plan(&copy), Fragmentation::Copy);
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nfragmentation = \"zero-copy\""));
    assert_eq!(e.line, 13, "the key's own line");
    assert!(e.message.contains("scatter-gather, copy"), "{e}");
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nfragmentation = \"copy\""));
    assert!(e.message.contains("fragmentation"), "{e}");
}

#[test]
fn load_levels_and_sides_sweep_and_take_the_x_axis() {
    let text = SWEEP
        .replace("\"tcp,udp\"", "\"tcp\"")
        .replace("families = \"ipv4,ipv6\"", "families = \"ipv6\"")
        .replace("sockbufs = \"4K,64K\"", "sockbufs = \"64K\"")
        .replace(
            "reps = 3",
            "reps = 3\nloads = \"0,1,2,4\"\nquick_loads = \"0,2\"\nload_on = \"server,client\"\n\
             study = \"Throughput drops sharply.\"",
        );
    let plan = sweep_plan(&text);
    assert_eq!(plan.full.loads, [0, 1, 2, 4]);
    assert_eq!(plan.quick.loads, [0, 2]);
    assert_eq!(plan.full.load_on, [LoadOn::Server, LoadOn::Client]);
    assert_eq!(plan.x, XAxis::Load);
    assert_eq!(plan.study.as_deref(), Some("Throughput drops sharply."));
    // Every level on every side is a point: 4 levels × 2 sides × 2
    // stacks × 5 sizes.
    let points = plan.full.points(KernelPath::Loopback).unwrap();
    assert_eq!(points.len(), 4 * 2 * 2 * 5);
    assert_eq!((points[0].load, points[0].load_on), (0, LoadOn::Server));
    assert_eq!((points[79].load, points[79].load_on), (4, LoadOn::Client));

    // One level the old way is still one level, anywhere.
    let plan = sweep_plan(&SWEEP.replace("reps = 3", "reps = 3\nload = 1"));
    assert_eq!(
        (plan.full.loads.as_slice(), plan.x),
        (&[1][..], XAxis::Sockbuf)
    );
    assert!(plan.full.load_on.iter().all(|&s| s == LoadOn::Both));

    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nload = 1\nloads = \"0,1\""));
    assert!(e.message.contains("not both"), "{e}");
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nloads = \"0,65\""));
    assert!(e.message.contains("at most 64"), "{e}");
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nload_on = \"left\""));
    assert!(e.message.contains("both, server, client"), "{e}");
    // A side load pins one flow: not with circuits.
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nload_on = \"server\"\ncircuits = 2"));
    assert!(e.message.contains("--circuits"), "{e}");
    // A messages run has one level on one side (Figure 17).
    let r = parse(
        "exp.toml",
        &GOOD.replace("reps = 2", "reps = 2\nload = 4\nload_on = \"server\""),
    )
    .unwrap();
    let Plan::Messages(m) = &r.runs[0].plan else {
        panic!("not a messages plan")
    };
    assert_eq!((m.load, m.load_on), (4, LoadOn::Server));
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nload_on = \"server,client\""));
    assert!(e.message.contains("one side"), "{e}");
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nloads = \"0,4\""));
    assert!(
        e.message.contains("`loads (use load)` does not apply"),
        "{e}"
    );
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nload = 65"));
    assert!(e.message.contains("at most 64"), "{e}");
}

#[test]
fn the_papadopoulos_recipe_sweeps_loads_on_each_side() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/papadopoulos1993.toml"
    );
    let recipe = load(std::path::Path::new(path)).unwrap();
    let run = recipe.runs.iter().find(|r| r.id == "background").unwrap();
    let Plan::Sweep(plan) = &run.plan else {
        panic!("background is not a sweep")
    };
    assert_eq!(plan.full.loads, [0, 1, 2, 4]);
    assert_eq!(plan.full.load_on, [LoadOn::Server, LoadOn::Client]);
    assert_eq!(plan.x, XAxis::Load);
    assert!(plan.quick.loads.len() >= 2 && plan.quick.loads[0] == 0);
}

#[test]
fn xtp_options_reach_the_xtp_points_only() {
    let xtp_run = SWEEP
        .replace("stacks = \"ref,kernel\"", "stacks = \"ref\"")
        .replace("protocols = \"tcp,udp\"", "protocols = \"tcp,xtp\"")
        .replace("reps = 3", "reps = 3\nxtp = \"driver, nocheck\"");
    let plan = sweep_plan(&xtp_run);
    assert!(plan.full.xtp.driver && plan.full.xtp.nocheck);
    assert!(!plan.full.xtp.go_back_n);
    let points = plan.full.points(KernelPath::Loopback).unwrap();
    for point in &points {
        let traffic::sweep::points::Work::Transfer(flows) = &point.work else {
            panic!("a throughput run transfers")
        };
        for flow in flows {
            match flow.protocol {
                Protocol::Xtp => assert!(flow.xtp.driver && flow.xtp.nocheck),
                _ => assert!(flow.xtp.is_default(), "{}", flow.protocol),
            }
        }
    }
    // Without XTP in the run, and with an unknown word: refused at the key.
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nxtp = \"driver\""));
    assert_eq!(e.line, 19);
    assert!(e.message.contains("add xtp"), "{e}");
    let e = error(&xtp_run.replace("driver, nocheck", "drivr"));
    assert!(e.message.contains("`drivr` is not one of"), "{e}");
    let e = error(&GOOD.replace("reps = 2", "reps = 2\nxtp = \"driver\""));
    assert!(e.message.contains("xtp"), "{e}");
}

#[test]
fn connect_each_is_a_delay_key_for_streams() {
    let delay = SWEEP
        .replace("kind = \"throughput\"", "kind = \"delay\"")
        .replace("protocols = \"tcp,udp\"", "protocols = \"tcp\"")
        .replace("reps = 3", "reps = 3\nconnect_each = true");
    let plan = sweep_plan(&delay);
    assert!(plan.full.connect_each && plan.quick.connect_each);
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\nconnect_each = true"));
    assert!(e.message.contains("delay"), "{e}");
    // UDP has no connection to set up: refused before anything runs.
    let e = error(&delay.replace("protocols = \"tcp\"", "protocols = \"udp\""));
    assert!(e.message.contains("stream"), "{e}");
}

#[test]
fn congestion_pins_the_tcp_flows_of_a_sweep_and_is_refused_without_them() {
    let plan = sweep_plan(&SWEEP.replace("reps = 3", "reps = 3\ncongestion = \"cubic\""));
    for grid in [&plan.full, &plan.quick] {
        assert_eq!(
            grid.congestion.map(|c| c.to_string()).as_deref(),
            Some("cubic")
        );
    }
    // Without the key each stack runs its default.
    assert!(sweep_plan(SWEEP).full.congestion.is_none());
    // A name no stack could hold, a run without TCP, a messages run.
    let e = error(&SWEEP.replace("reps = 3", "reps = 3\ncongestion = \"cu bic\""));
    assert!(e.message.contains("not a congestion control's name"), "{e}");
    let udp = SWEEP.replace("protocols = \"tcp,udp\"", "protocols = \"udp\"");
    let e = error(&udp.replace("reps = 3", "reps = 3\ncongestion = \"cubic\""));
    assert!(e.message.contains("no TCP flows"), "{e}");
    let e = error(&GOOD.replace("reps = 2", "reps = 2\ncongestion = \"cubic\""));
    assert!(e.message.contains("congestion"), "{e}");
}

#[test]
fn the_studies_compare_the_kernel_with_the_reference_stack_on_one_algorithm() {
    let mut kernel_tcp = Vec::new();
    for (file, text) in crate::experiment::LAB_RECIPES {
        let recipe = parse(file, text).unwrap();
        for run in &recipe.runs {
            // Which runs set the kernel's TCP beside the reference
            // stack's (CUBIC), and the congestion control they pin.
            let (beside, pinned) = match &run.plan {
                Plan::Sweep(plan) => {
                    let both = plan.full.stacks.contains(&StackKind::Kernel)
                        && plan.full.stacks.contains(&StackKind::Ref);
                    let tcp = plan
                        .full
                        .mix
                        .as_deref()
                        .unwrap_or(&plan.full.protocols)
                        .contains(&Protocol::Tcp);
                    (both && tcp, plan.full.congestion)
                }
                // The report sets every kernel messages run beside the
                // recipe's reference messages runs.
                Plan::Kernel(plan) => {
                    let tcp = plan.protocol == Protocol::Tcp;
                    if tcp {
                        kernel_tcp.push(format!("{file}: {}", run.id));
                    }
                    (tcp, plan.congestion)
                }
                Plan::Messages(_) | Plan::Pipeline(_) => continue,
            };
            if beside {
                assert_eq!(
                    pinned.map(|c| c.to_string()).as_deref(),
                    Some("cubic"),
                    "{file}: run {}",
                    run.id
                );
            }
        }
    }
    // The kernel TCP messages runs were among those checked.
    for run in [
        "experiments/xie1999.toml: kernel-tcp",
        "experiments/xie1999.toml: kernel-tcp-loopback",
        "experiments/xie1999.toml: kernel-tcp-ipv4",
        "experiments/papadopoulos1993.toml: kernel-stop-and-wait",
    ] {
        assert!(kernel_tcp.iter().any(|r| r == run), "{run}: {kernel_tcp:?}");
    }
}
