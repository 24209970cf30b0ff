//! The stack's probe sites, declared once (DESIGN.md, "Probe events").
//! Spans are named `NAME.enter` / `NAME.exit` so converters pair them.

use probe::{Category, Kind, Layer};

probe::locations! {
    /// Every location the reference stack records at.
    pub static LOCATIONS;
    BUFFER_ALLOC_ENTER = ("buffer.alloc.enter", Layer::Host, Kind::SpanEnter, Category::Buffer, None);
    BUFFER_ALLOC_EXIT = ("buffer.alloc.exit", Layer::Host, Kind::SpanExit, Category::Buffer, None);
    BUFFER_FREE_ENTER = ("buffer.free.enter", Layer::Host, Kind::SpanEnter, Category::Buffer, None);
    BUFFER_FREE_EXIT = ("buffer.free.exit", Layer::Host, Kind::SpanExit, Category::Buffer, None);
    DATA_COPY_ENTER = ("data.copy.enter", Layer::Host, Kind::SpanEnter, Category::DataMove, None);
    DATA_COPY_EXIT = ("data.copy.exit", Layer::Host, Kind::SpanExit, Category::DataMove, None);
    PULLUP_ENTER = ("buffer.pullup.enter", Layer::Host, Kind::SpanEnter, Category::DataMove, None);
    PULLUP_EXIT = ("buffer.pullup.exit", Layer::Host, Kind::SpanExit, Category::DataMove, None);
}
