//! The location table: what each probe site is.
//!
//! Each crate that records declares its table once with [`locations!`](crate::locations!),
//! which also defines one [`Loc`](crate::Loc) constant per entry. The
//! table travels in the trace file, so analysis reads names and kinds from
//! there and never depends on numbers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One probe site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// Unique dotted name, e.g. `"tcp.output.enter"`.
    pub name: &'static str,
    pub layer: Layer,
    pub kind: Kind,
    pub category: Category,
    /// For enqueue/dequeue probes: the queue they belong to.
    pub queue: Option<&'static str>,
}

/// Generates the snake_case name table, `as_str`, `from_name`, `ALL`
/// and `Display` for a fieldless enum, so the file names and the Rust
/// names cannot drift apart.
macro_rules! named_enum {
    ($(#[$meta:meta])* $ty:ident { $($(#[$vmeta:meta])* $variant:ident = $name:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $ty {
            $($(#[$vmeta])* $variant,)+
        }

        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The snake_case name used in trace files, CSV and JSON.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// Parses a snake_case name.
            pub fn from_name(name: &str) -> Option<$ty> {
                match name {
                    $($name => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

named_enum! {
    /// Where in the stack a probe sits.
    Layer {
        /// The application or traffic tool.
        App = "app",
        Socket = "socket",
        Transport = "transport",
        Network = "network",
        Link = "link",
        /// The host's poll loop, timers and scheduling.
        Host = "host",
        /// The recorder itself (calibration).
        Probe = "probe",
    }
}

named_enum! {
    /// What a probe marks.
    Kind {
        /// Head of a function or cost centre.
        SpanEnter = "span_enter",
        /// End of a function or cost centre.
        SpanExit = "span_exit",
        /// A packet or message entered a queue.
        Enqueue = "enqueue",
        /// A packet or message left a queue.
        Dequeue = "dequeue",
        /// A single moment.
        Point = "point",
    }
}

named_enum! {
    /// The overhead category a span's time is charged to.
    Category {
        Checksum = "checksum",
        DataMove = "data_move",
        Buffer = "buffer",
        Fragmentation = "fragmentation",
        /// Putting fragments back together (the receive side's
        /// counterpart of `fragmentation`).
        Reassembly = "reassembly",
        ProtocolSend = "protocol_send",
        ProtocolReceive = "protocol_receive",
        DataStructure = "data_structure",
        Socket = "socket",
        Link = "link",
        /// Serialisation on the wire and waiting for the device: time the
        /// stack has handed a frame over and its last bit has not yet left
        /// (send), or, on the receive side, an arrived frame waits in the
        /// device for the receiver to take it (a sleeping receiver's
        /// wake-up included) or the next frame of a message is still on
        /// its way.
        Wire = "wire",
        /// The tool's own bookkeeping (capture, trace flushing) where it
        /// cannot be kept out of a timed window; always reported and
        /// subtracted.
        Instrumentation = "instrumentation",
        None = "none",
    }
}

impl Category {
    /// Whether spans of this category are cost centres inside a layer
    /// (recorded at the `functions` probe depth only), rather than layer
    /// boundaries, queues or the tool's own cost.
    pub const fn is_cost_centre(self) -> bool {
        matches!(
            self,
            Category::Checksum
                | Category::DataMove
                | Category::Buffer
                | Category::Fragmentation
                | Category::Reassembly
                | Category::DataStructure
        )
    }
}

/// Compile-time check used by [`locations!`](crate::locations!): every name in a table is
/// unique, so a name identifies a location in analysis.
pub const fn names_are_unique(names: &[&str]) -> bool {
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        while j < names.len() {
            if str_eq(names[i], names[j]) {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut k = 0;
    while k < a.len() {
        if a[k] != b[k] {
            return false;
        }
        k += 1;
    }
    true
}

/// Declares a static location table and one `Loc` constant per entry.
///
/// ```
/// use probe::{locations, Category, Kind, Layer};
///
/// locations! {
///     /// Probe sites of the example.
///     pub static EXAMPLE;
///     FOO_ENTER = ("foo.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
///     FOO_EXIT = ("foo.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
///     TXQ_IN = ("txq.enqueue", Layer::Link, Kind::Enqueue, Category::Link, Some("txq"));
/// }
///
/// assert_eq!(EXAMPLE[FOO_EXIT.index()].name, "foo.exit");
/// assert_eq!(TXQ_IN.index(), 2);
/// ```
///
/// The ids are the declaration order. A duplicate name is a compile error.
/// The macro also declares a private enum with the table's name (in the
/// type namespace) that does the numbering.
#[macro_export]
macro_rules! locations {
    (
        $(#[$table_meta:meta])*
        $vis:vis static $table:ident;
        $(
            $(#[$meta:meta])*
            $name:ident = ($label:expr, $layer:expr, $kind:expr, $category:expr, $queue:expr $(, detail = $detail:literal)? $(,)?);
        )+
    ) => {
        // The enum numbers the entries so no id is written by hand; a
        // table of more than 65536 entries fails to compile here.
        #[allow(non_camel_case_types, dead_code, clippy::upper_case_acronyms)]
        #[repr(u16)]
        enum $table {
            $($name,)+
        }

        $(#[$table_meta])*
        $vis static $table: &[$crate::Location] = &[
            $(
                $crate::Location {
                    name: $label,
                    layer: $layer,
                    kind: $kind,
                    category: $category,
                    queue: $queue,
                },
            )+
        ];

        $(
            $(#[$meta])*
            $vis const $name: $crate::Loc =
                $crate::Loc::declared($table::$name as u16, $category)$(.with_detail($detail))?;
        )+

        const _: () = assert!(
            $crate::location::names_are_unique(&[$($label),+]),
            "duplicate name in location table"
        );
        const _: () = assert!(
            [$($label),+].len() <= $crate::Loc::MAX_LOCATIONS,
            "a location table holds at most 32768 entries"
        );
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::locations! {
        static TEST_TABLE;
        A = ("a", Layer::App, Kind::Point, Category::None, None);
        B = ("b.enter", Layer::Transport, Kind::SpanEnter, Category::Checksum, None);
        C = ("q.in", Layer::Link, Kind::Enqueue, Category::Link, Some("q"));
        D = ("d.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolReceive, None, detail = true);
    }

    #[test]
    fn macro_numbers_in_declaration_order() {
        assert_eq!((A.index(), B.index(), C.index()), (0, 1, 2));
        // The checksum is a cost centre, left out at the layers depth.
        assert_eq!(
            (A.is_detail(), B.is_detail(), C.is_detail()),
            (false, true, false)
        );
        // Marked a detail whatever its category.
        assert!(D.is_detail());
        assert_eq!(D.index(), 3);
        assert_eq!(TEST_TABLE.len(), 4);
        assert_eq!(TEST_TABLE[B.index()].name, "b.enter");
        assert_eq!(TEST_TABLE[C.index()].queue, Some("q"));
    }

    #[test]
    fn names_round_trip() {
        for l in Layer::ALL {
            assert_eq!(Layer::from_name(l.as_str()), Some(*l));
        }
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.as_str()), Some(*k));
        }
        for c in Category::ALL {
            assert_eq!(Category::from_name(c.as_str()), Some(*c));
        }
        assert_eq!(Category::DataMove.to_string(), "data_move");
        assert_eq!(Kind::from_name("nope"), None);
    }

    #[test]
    fn serde_uses_snake_case() {
        assert_eq!(
            serde_json::to_string(&Category::ProtocolReceive).unwrap(),
            "\"protocol_receive\""
        );
    }

    #[test]
    fn uniqueness_check() {
        assert!(names_are_unique(&["a", "b", "ab"]));
        assert!(!names_are_unique(&["a", "b", "a"]));
        assert!(names_are_unique(&[]));
    }
}
