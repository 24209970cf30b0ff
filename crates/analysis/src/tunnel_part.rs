//! Which spans are a tunnel's work: IPv6 over the host's own IPv4
//! (`stack::iface::tunnel`, docs/tunnels.md). A tunnel adds a layer
//! between IPv6 and the link: the encapsulation (`tunnel.transmit`) with
//! the encapsulating IPv4 output inside it, and on receipt the outer IPv4
//! input (`ipv4.input`) with the decapsulation (`tunnel.receive`) inside
//! it. The per-layer split charges those spans to their sites' layers
//! (link and network), where they would hide among IPv6's; this module
//! picks them out so the report can give the tunnel rows of its own (the
//! IPv6 study's testbed ran 6-over-4, and its CPU tables name the tunnel
//! functions and the IPv4 module apart).
//!
//! A span is the tunnel's when, walking from it up to its outermost
//! enclosing span, a *tunnel root* comes before any other link-layer span:
//! the roots are the `tunnel.*` spans and every `ipv4.*` span that holds
//! one (the outer IPv4 input). The link's own spans below the tunnel
//! (`link.transmit` and what it holds) are the link's, as over native
//! IPv6, and so is a 6-over-4 link's IPv6 neighbour lookup made inside
//! the encapsulation span (IPv6's ND, which native IPv6 makes too); an
//! ARP lookup under the encapsulating IPv4 output is the tunnel's.

use std::collections::HashMap;

use probe::Layer;

use crate::spans::Span;

/// The tunnel's spans of one thread, with a cache of what each `ipv4.*`
/// span holds (a window asks about the same spans many times).
pub struct TunnelSpans<'a, F> {
    spans: &'a [Span],
    /// The name and layer of a span's enter site.
    site: F,
    holds_tunnel: HashMap<usize, bool>,
}

impl<'a, F> TunnelSpans<'a, F>
where
    F: Fn(u16) -> (&'a str, Layer),
{
    pub fn new(spans: &'a [Span], site: F) -> Self {
        Self {
            spans,
            site,
            holds_tunnel: HashMap::new(),
        }
    }

    fn is_tunnel_site(&self, index: usize) -> bool {
        (self.site)(self.spans[index].enter)
            .0
            .starts_with("tunnel.")
    }

    /// Whether span `index` is a tunnel root.
    fn is_root(&mut self, index: usize) -> bool {
        if self.is_tunnel_site(index) {
            return true;
        }
        if !(self.site)(self.spans[index].enter).0.starts_with("ipv4.") {
            return false;
        }
        if let Some(&known) = self.holds_tunnel.get(&index) {
            return known;
        }
        // Its descendants follow it, entered before it exits.
        let exit = self.spans[index].exit_index;
        let holds = (index + 1..self.spans.len())
            .take_while(|&j| self.spans[j].enter_index < exit)
            .any(|j| self.is_tunnel_site(j));
        self.holds_tunnel.insert(index, holds);
        holds
    }

    /// Whether span `index` is the tunnel's work.
    pub fn contains(&mut self, index: usize) -> bool {
        // A 6-over-4 link resolves its IPv6 neighbours by ND inside the
        // encapsulation span: that lookup is IPv6's, as over Ethernet,
        // unless it is IPv4's own (under the encapsulating ipv4.output).
        let ipv6_lookup = (self.site)(self.spans[index].enter)
            .0
            .starts_with("neighbor.lookup.");
        let mut through_ipv4 = false;
        let mut at = Some(index);
        while let Some(i) = at {
            if self.is_root(i) {
                return !(ipv6_lookup && !through_ipv4 && self.is_tunnel_site(i));
            }
            through_ipv4 |= (self.site)(self.spans[i].enter).0.starts_with("ipv4.");
            if (self.site)(self.spans[i].enter).1 == Layer::Link {
                return false;
            }
            at = self.spans[i].parent;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe::Category;

    const NAMES: &[(&str, Layer)] = &[
        ("ipv6.output.enter", Layer::Network),
        ("tunnel.transmit.enter", Layer::Link),
        ("ipv4.output.enter", Layer::Network),
        ("route.lookup.enter", Layer::Network),
        ("link.transmit.enter", Layer::Link),
        ("link.receive.enter", Layer::Link),
        ("ipv4.input.enter", Layer::Network),
        ("tunnel.receive.enter", Layer::Link),
        ("checksum.enter", Layer::Transport),
        ("neighbor.lookup.enter", Layer::Network),
    ];

    /// A span of site `site` from record `enter` to `exit`, inside `parent`.
    fn span(site: u16, enter: usize, exit: usize, parent: Option<usize>) -> Span {
        Span {
            enter: site,
            category: Category::None,
            start: enter as u64,
            end: exit as u64,
            enter_index: enter,
            exit_index: exit,
            len: 0,
            flow: 0,
            depth: 0,
            parent,
            inclusive: 0.0,
            exclusive: 0.0,
        }
    }

    fn classify(spans: &[Span]) -> Vec<bool> {
        let mut tunnel = TunnelSpans::new(spans, |site| NAMES[site as usize]);
        (0..spans.len()).map(|i| tunnel.contains(i)).collect()
    }

    #[test]
    fn the_encapsulation_and_its_ipv4_output_are_the_tunnels_the_link_below_is_not() {
        // ipv6.output { tunnel.transmit { ipv4.output { route.lookup,
        // link.transmit { checksum } } } }
        let spans = [
            span(0, 0, 11, None),
            span(1, 1, 10, Some(0)),
            span(2, 2, 9, Some(1)),
            span(3, 3, 4, Some(2)),
            span(4, 5, 8, Some(2)),
            span(8, 6, 7, Some(4)),
        ];
        assert_eq!(classify(&spans), [false, true, true, true, false, false]);
    }

    #[test]
    fn a_6over4_links_ipv6_neighbour_lookup_is_ipv6s_and_arp_under_ipv4_the_tunnels() {
        // tunnel.transmit { neighbor.lookup (IPv6 ND), ipv4.output {
        // neighbor.lookup (IPv4's) } }
        let spans = [
            span(1, 0, 7, None),
            span(9, 1, 2, Some(0)),
            span(2, 3, 6, Some(0)),
            span(9, 4, 5, Some(2)),
        ];
        assert_eq!(classify(&spans), [true, false, true, true]);
    }

    #[test]
    fn the_outer_ipv4_input_holding_a_decapsulation_is_the_tunnels() {
        // link.receive { ipv4.input { checksum, tunnel.receive } }, then
        // an ipv4.input of plain IPv4 traffic, which is not.
        let spans = [
            span(5, 0, 7, None),
            span(6, 1, 6, Some(0)),
            span(8, 2, 3, Some(1)),
            span(7, 4, 5, Some(1)),
            span(5, 8, 13, None),
            span(6, 9, 12, Some(4)),
            span(8, 10, 11, Some(5)),
        ];
        assert_eq!(
            classify(&spans),
            [false, true, true, true, false, false, false]
        );
    }
}
