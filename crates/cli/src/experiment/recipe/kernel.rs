//! A `messages` run on the Linux kernel's stack (`stack = "kernel"`,
//! issue 19): single messages one at a time over the kernel's TCP or UDP,
//! sender and receiver in two network namespaces joined by a veth pair the
//! run makes and removes (`link = "veth"`), or in one namespace over its
//! loopback (`link = "loopback"`), traced with the eBPF probes of
//! `crates/kernel-probe`.
//!
//! Keys: `protocol` (tcp, udp), `family`, `sizes` / `quick_sizes`,
//! `reps` / `quick_reps` (in rounds: every size once per round),
//! `warmup`, `link`, `congestion` (TCP's congestion control, set on both
//! ends' sockets; TCP runs only). The reference stack's keys (socket buffers, stop
//! definition, probe depth, fragmentation, slope targets, load) are
//! refused: the kernel's windows are fixed (docs/lab.md).

use toml::Spanned;

use kernel_probe::messages::Path;
use traffic::congestion::Congestion;
use traffic::spec::{Family, Protocol};

use super::{congestion_of, reps_of, sizes, Locator, RawRun, RecipeError};

/// Most messages a kernel run sends (sizes × repetitions).
const MAX_MESSAGES: u64 = 20_000;
/// The largest UDP payload over IPv4 (IPv6's is larger; one limit for
/// both keeps the recipe valid for either family).
const MAX_UDP: usize = 65_507;

/// A checked kernel messages run.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelPlan {
    pub protocol: Protocol,
    pub family: Family,
    pub path: Path,
    pub sizes: Vec<usize>,
    pub quick_sizes: Vec<usize>,
    pub reps: u32,
    pub quick_reps: u32,
    pub warmup: u32,
    /// TCP's congestion control on both ends (`congestion`); none: the
    /// kernel's default (`net.ipv4.tcp_congestion_control`).
    pub congestion: Option<Congestion>,
}

impl KernelPlan {
    pub fn sizes_and_reps(&self, quick: bool) -> (&[usize], u32) {
        if quick {
            (&self.quick_sizes, self.quick_reps)
        } else {
            (&self.sizes, self.reps)
        }
    }
}

/// Whether a run asks for the kernel's stack: `stack = "kernel"`; `"ref"`
/// (the default) is the reference stack.
pub(super) fn wants_kernel(run: &RawRun, loc: &Locator) -> Result<bool, RecipeError> {
    let Some(stack) = &run.stack else {
        return Ok(false);
    };
    if run.kind.get_ref() != "messages" {
        return Err(loc.at(
            stack.span(),
            format!(
                "`stack` applies to a `messages` run (a `{}` run has `stacks`, or none)",
                run.kind.get_ref()
            ),
        ));
    }
    match stack.get_ref().as_str() {
        "kernel" => Ok(true),
        "ref" => Ok(false),
        other => Err(loc.at(
            stack.span(),
            format!("stack `{other}` is not one of: ref, kernel"),
        )),
    }
}

pub(super) fn plan(run: &RawRun, loc: &Locator) -> Result<KernelPlan, RecipeError> {
    refuse_other_keys(run, loc)?;
    let path = match run.link.get_ref().as_str() {
        "veth" => Path::Veth,
        "loopback" => Path::Loopback,
        other => {
            return Err(loc.at(
                run.link.span(),
                format!("link `{other}`: a kernel run takes `veth` (two namespaces) or `loopback`"),
            ))
        }
    };
    let protocol = match run
        .protocol
        .as_ref()
        .map(|p| (p.get_ref().as_str(), p.span()))
    {
        Some(("tcp", _)) => Protocol::Tcp,
        Some(("udp", _)) => Protocol::Udp,
        Some((other, span)) => {
            return Err(loc.at(
                span,
                format!("protocol `{other}`: a kernel run takes tcp or udp"),
            ))
        }
        None => {
            return Err(loc.at(
                run.kind.span(),
                "a kernel `messages` run needs `protocol` (tcp or udp)".into(),
            ))
        }
    };
    let family = match run
        .family
        .as_ref()
        .map(|f| (f.get_ref().as_str(), f.span()))
    {
        None | Some(("ipv6", _)) => Family::V6,
        Some(("ipv4", _)) => Family::V4,
        Some((other, span)) => {
            return Err(loc.at(span, format!("family `{other}` is not one of: ipv6, ipv4")))
        }
    };
    let sizes_of = |key: &str, value: &Spanned<String>| -> Result<Vec<usize>, RecipeError> {
        let list = sizes(key, value.get_ref()).map_err(|e| loc.at(value.span(), e))?;
        if protocol == Protocol::Udp {
            if let Some(big) = list.iter().find(|&&s| s > MAX_UDP) {
                return Err(loc.at(
                    value.span(),
                    format!("{key}: {big} bytes is more than a UDP datagram holds ({MAX_UDP})"),
                ));
            }
        }
        Ok(list)
    };
    let sizes = sizes_of("sizes", &run.sizes)?;
    let quick_sizes = match &run.quick_sizes {
        Some(q) => sizes_of("quick_sizes", q)?,
        None => sizes.clone(),
    };
    let congestion = congestion_of(run, &[protocol], loc)?;
    let reps = reps_of(loc, "reps", &run.reps, 1)?;
    let quick_reps = reps_of(loc, "quick_reps", &run.quick_reps, 1)?;
    let total = sizes.len() as u64 * u64::from(reps);
    if total > MAX_MESSAGES {
        return Err(loc.at(
            run.sizes.span(),
            format!("sizes × reps = {total} messages: a kernel run sends at most {MAX_MESSAGES}"),
        ));
    }
    Ok(KernelPlan {
        protocol,
        family,
        path,
        sizes,
        quick_sizes,
        reps,
        quick_reps,
        warmup: run.warmup.as_ref().map_or(0, |w| *w.get_ref()),
        congestion,
    })
}

fn refuse_other_keys(run: &RawRun, loc: &Locator) -> Result<(), RecipeError> {
    let why =
        "does not apply to a kernel `messages` run (its windows and buffers are the kernel's)";
    let spans = [
        ("sockbuf", run.sockbuf.as_ref().map(Spanned::span)),
        ("stop", run.stop.as_ref().map(Spanned::span)),
        ("probes", run.probes.as_ref().map(Spanned::span)),
        (
            "fragmentation",
            run.fragmentation.as_ref().map(Spanned::span),
        ),
        (
            "slope_ci_target",
            run.slope_ci_target.as_ref().map(Spanned::span),
        ),
        (
            "quick_slope_ci_target",
            run.quick_slope_ci_target.as_ref().map(Spanned::span),
        ),
        (
            "slope_time_cap",
            run.slope_time_cap.as_ref().map(Spanned::span),
        ),
        (
            "quick_slope_time_cap",
            run.quick_slope_time_cap.as_ref().map(Spanned::span),
        ),
        ("load", run.load.as_ref().map(Spanned::span)),
        ("load_on", run.load_on.as_ref().map(Spanned::span)),
        ("compute_us", run.compute_us.as_ref().map(Spanned::span)),
        ("stacks", run.stacks.as_ref().map(Spanned::span)),
        ("protocols", run.protocols.as_ref().map(Spanned::span)),
        ("mix", run.mix.as_ref().map(Spanned::span)),
        ("families", run.families.as_ref().map(Spanned::span)),
        ("sockbufs", run.sockbufs.as_ref().map(Spanned::span)),
        (
            "quick_sockbufs",
            run.quick_sockbufs.as_ref().map(Spanned::span),
        ),
        ("rates", run.rates.as_ref().map(Spanned::span)),
        ("quick_rates", run.quick_rates.as_ref().map(Spanned::span)),
        ("total", run.total.as_ref().map(Spanned::span)),
        ("quick_total", run.quick_total.as_ref().map(Spanned::span)),
        ("count", run.count.as_ref().map(Spanned::span)),
        ("quick_count", run.quick_count.as_ref().map(Spanned::span)),
        ("min_duration", run.min_duration.as_ref().map(Spanned::span)),
        (
            "quick_min_duration",
            run.quick_min_duration.as_ref().map(Spanned::span),
        ),
        ("circuits", run.circuits.as_ref().map(Spanned::span)),
        ("xtp", run.xtp.as_ref().map(Spanned::span)),
        ("connect_each", run.connect_each.as_ref().map(Spanned::span)),
        ("loads", run.loads.as_ref().map(Spanned::span)),
        ("quick_loads", run.quick_loads.as_ref().map(Spanned::span)),
        ("study", run.study.as_ref().map(Spanned::span)),
        ("interleave", run.interleave.as_ref().map(Spanned::span)),
        ("x", run.x.as_ref().map(Spanned::span)),
        ("predict", run.predict.as_ref().map(Spanned::span)),
        ("ci_target", run.ci_target.as_ref().map(Spanned::span)),
        (
            "quick_ci_target",
            run.quick_ci_target.as_ref().map(Spanned::span),
        ),
        ("max_reps", run.max_reps.as_ref().map(Spanned::span)),
        (
            "quick_max_reps",
            run.quick_max_reps.as_ref().map(Spanned::span),
        ),
        ("max_time", run.max_time.as_ref().map(Spanned::span)),
        (
            "quick_max_time",
            run.quick_max_time.as_ref().map(Spanned::span),
        ),
    ];
    match spans.into_iter().find_map(|(key, span)| Some((key, span?))) {
        Some((key, span)) => Err(loc.at(span, format!("`{key}` {why}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Plan};
    use super::*;

    fn recipe(run: &str) -> String {
        format!(
            "name = \"k\"\ntitle = \"t\"\nsource = \"s\"\n[[run]]\nid = \"r\"\nkind = \"messages\"\n{run}\n"
        )
    }

    /// The plan of a recipe whose one run is `run`, a kernel run.
    fn kernel_plan(run: &str) -> KernelPlan {
        let r = parse("k.toml", &recipe(run)).unwrap();
        let Plan::Kernel(k) = &r.runs[0].plan else {
            panic!("not a kernel plan");
        };
        k.clone()
    }

    #[test]
    fn a_kernel_run_is_read() {
        let k = kernel_plan(
            "stack = \"kernel\"\nlink = \"veth\"\nprotocol = \"udp\"\nfamily = \"ipv4\"\nsizes = \"1024,65507\"\nquick_sizes = \"1024\"\nreps = 5\nwarmup = 3",
        );
        assert_eq!(k.path, Path::Veth);
        assert_eq!(k.protocol, Protocol::Udp);
        assert_eq!(k.family, Family::V4);
        assert_eq!(k.sizes, vec![1024, 65507]);
        assert_eq!(k.sizes_and_reps(true), (&[1024usize][..], 1));
        assert_eq!(k.warmup, 3);
        assert_eq!(k.congestion, None);
    }

    #[test]
    fn congestion_pins_a_tcp_run_and_is_refused_without_tcp() {
        let run = "stack = \"kernel\"\nlink = \"veth\"\nprotocol = \"tcp\"\nsizes = \"1K\"\ncongestion = \"cubic\"";
        assert_eq!(
            kernel_plan(run)
                .congestion
                .map(|c| c.to_string())
                .as_deref(),
            Some("cubic")
        );
        let tcp = recipe(run);
        // UDP has no congestion control: refused at the key's line, naming
        // the key and the run.
        let err = parse("k.toml", &tcp.replace("\"tcp\"", "\"udp\"")).unwrap_err();
        assert!(
            err.message
                .contains("`congestion` is TCP's: run `r` has no TCP flows"),
            "{err}"
        );
        assert_eq!(err.line, 11, "{err}");
        // A name no kernel could hold.
        let err = parse("k.toml", &tcp.replace("cubic", "cu bic")).unwrap_err();
        assert!(
            err.message.contains("not a congestion control's name"),
            "{err}"
        );
    }

    #[test]
    fn reference_keys_and_bad_values_are_refused_with_their_place() {
        let bad = [
            ("stack = \"kernel\"\nlink = \"veth\"\nprotocol = \"tcp\"\nsizes = \"1K\"\nsockbuf = \"8K\"", "`sockbuf` does not apply"),
            ("stack = \"kernel\"\nlink = \"fast-ethernet\"\nprotocol = \"tcp\"\nsizes = \"1K\"", "veth"),
            ("stack = \"kernel\"\nlink = \"veth\"\nprotocol = \"xtp\"\nsizes = \"1K\"", "tcp or udp"),
            ("stack = \"kernel\"\nlink = \"veth\"\nprotocol = \"udp\"\nsizes = \"70000\"", "UDP datagram"),
            ("stack = \"bsd\"\nlink = \"veth\"\nprotocol = \"udp\"\nsizes = \"1K\"", "ref, kernel"),
        ];
        for (run, message) in bad {
            let err = parse("k.toml", &recipe(run)).unwrap_err();
            assert!(err.to_string().contains(message), "{run}: {err}");
            assert!(err.line > 6, "{err}");
        }
    }

    #[test]
    fn stack_is_for_messages_runs() {
        let text = "name = \"k\"\ntitle = \"t\"\nsource = \"s\"\n[[run]]\nid = \"r\"\nkind = \"throughput\"\nlink = \"default\"\nsizes = \"1K\"\nstack = \"kernel\"\n";
        let err = parse("k.toml", text).unwrap_err();
        assert!(err.to_string().contains("`stack` applies"), "{err}");
    }
}
