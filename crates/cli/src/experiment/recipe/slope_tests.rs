//! The messages runs' slope target: `slope_ci_target`, its quick twin and
//! the time caps are read, checked, and refused where they mean nothing.

use std::time::Duration;

use super::*;

const MESSAGES: &str = r#"
name = "t"
title = "T"
source = "000_x.txt"

[[run]]
id = "tcp"
kind = "messages"
protocol = "tcp"
link = "fast-ethernet"
sizes = "100..1000:100"
quick_sizes = "100,500,1000"
reps = 2
"#;

fn plan(text: &str) -> MessagesPlan {
    let recipe = parse("exp.toml", text).unwrap();
    match &recipe.runs[0].plan {
        Plan::Messages(m) => m.clone(),
        _ => panic!("not a messages plan"),
    }
}

fn error(text: &str) -> RecipeError {
    parse("exp.toml", text).unwrap_err()
}

#[test]
fn without_a_target_a_run_is_one_pass() {
    let m = plan(MESSAGES);
    assert_eq!((m.slope_ci_target, m.quick_slope_ci_target), (None, None));
    assert_eq!(m.slope_time_cap, DEFAULT_SLOPE_TIME_CAP);
    assert_eq!(m.quick_slope_time_cap, DEFAULT_QUICK_SLOPE_TIME_CAP);
}

#[test]
fn the_target_and_caps_are_read_and_quick_defaults_to_the_full_target() {
    let m = plan(&format!(
        "{MESSAGES}slope_ci_target = 0.05\nslope_time_cap = 90\nquick_slope_time_cap = 2.5\n"
    ));
    assert_eq!(m.slope_ci_target, Some(0.05));
    assert_eq!(m.quick_slope_ci_target, Some(0.05));
    assert_eq!(m.slope_time_cap, Duration::from_secs(90));
    assert_eq!(m.quick_slope_time_cap, Duration::from_millis(2500));
    let m = plan(&format!(
        "{MESSAGES}slope_ci_target = 0.05\nquick_slope_ci_target = 0.2\n"
    ));
    assert_eq!(m.quick_slope_ci_target, Some(0.2));
}

#[test]
fn impossible_targets_and_caps_are_refused_at_their_line() {
    for bad in ["0.0", "1.0", "-0.1", "nan"] {
        let e = error(&format!("{MESSAGES}slope_ci_target = {bad}\n"));
        assert_eq!(e.line, 14, "{e}");
        assert!(e.message.contains("slope_ci_target"), "{e}");
    }
    for bad in ["0", "-1", "4000"] {
        let e = error(&format!("{MESSAGES}quick_slope_time_cap = {bad}\n"));
        assert!(e.message.contains("quick_slope_time_cap"), "{e}");
    }
}

#[test]
fn a_target_needs_three_sizes_in_each_list_it_judges() {
    let two = MESSAGES.replace("100,500,1000", "100,500");
    let e = error(&format!("{two}slope_ci_target = 0.05\n"));
    assert!(e.message.contains("three sizes"), "{e}");
    // The quick list is judged by the quick twin when there is one.
    let e = error(&format!("{two}quick_slope_ci_target = 0.05\n"));
    assert!(e.message.contains("quick_slope_ci_target"), "{e}");
}

#[test]
fn sweep_runs_refuse_the_slope_keys() {
    let sweep = r#"
name = "t"
title = "T"
source = "000_x.txt"

[[run]]
id = "tp"
kind = "throughput"
link = "fast-ethernet"
sizes = "1K"
slope_ci_target = 0.05
"#;
    let e = error(sweep);
    assert_eq!(e.line, 11, "{e}");
    assert!(e.message.contains("does not apply"), "{e}");
}
