//! A packet an association asks the host to send: owned, so it outlives
//! the association's borrow, and turned into the wire crate's `XtpRepr`
//! for emitting.

use wire::xtp::{
    AddressRepr, ControlRepr, DiagCode, DiagValue, Segment, Span, Spans, TrafficRepr, XtpOptions,
    XtpRepr,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Data(Vec<u8>),
    First {
        address: AddressRepr,
        traffic: TrafficRepr,
        data: Vec<u8>,
    },
    Cntl(ControlRepr),
    Ecntl(ControlRepr, Vec<Span>),
    Tcntl {
        control: ControlRepr,
        xkey: u64,
        traffic: TrafficRepr,
    },
    /// Multicast join control (a receiver answering FIRST).
    Jcntl {
        control: ControlRepr,
        xkey: u64,
        address: AddressRepr,
        traffic: TrafficRepr,
    },
    Diag(DiagCode, DiagValue, &'static str),
}

/// One packet to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub key: u64,
    pub options: XtpOptions,
    /// Priority (with SORT); 0 otherwise.
    pub sort: u16,
    /// The beginning tag of a DATA or FIRST packet (BTAG).
    pub btag: Option<u64>,
    pub sync: u32,
    pub seq: u64,
    pub body: Body,
}

impl Outgoing {
    /// User data bytes it carries.
    pub fn data_len(&self) -> usize {
        match &self.body {
            Body::Data(data) | Body::First { data, .. } => data.len(),
            _ => 0,
        }
    }

    /// The user data it carries (empty for control packets).
    pub fn data(&self) -> &[u8] {
        match &self.body {
            Body::Data(data) | Body::First { data, .. } => data,
            _ => &[],
        }
    }

    /// Everything but the user data: the header and the segment up to its
    /// data (address segment, traffic specifier, tag). `dlen` must then
    /// be raised by the data's length; see [`data`](Self::data).
    pub fn head(&self) -> XtpRepr<'_> {
        let mut repr = self.repr();
        match &mut repr.segment {
            Segment::Data { data, .. } | Segment::First { data, .. } => *data = &[],
            _ => {}
        }
        repr
    }

    /// Its meaning for the wire crate.
    pub fn repr(&self) -> XtpRepr<'_> {
        let segment = match &self.body {
            Body::Data(data) => Segment::Data {
                btag: self.btag,
                data,
            },
            Body::First {
                address,
                traffic,
                data,
            } => Segment::First {
                address: *address,
                traffic: *traffic,
                btag: self.btag,
                data,
            },
            Body::Cntl(control) => Segment::Cntl(*control),
            Body::Ecntl(control, spans) => Segment::Ecntl {
                control: *control,
                spans: Spans::List(spans),
            },
            Body::Tcntl {
                control,
                xkey,
                traffic,
            } => Segment::Tcntl {
                control: *control,
                xkey: *xkey,
                traffic: *traffic,
            },
            Body::Jcntl {
                control,
                xkey,
                address,
                traffic,
            } => Segment::Jcntl {
                control: *control,
                xkey: *xkey,
                address: *address,
                traffic: *traffic,
            },
            Body::Diag(code, value, message) => Segment::Diag {
                code: *code,
                value: *value,
                message: message.as_bytes(),
            },
        };
        XtpRepr {
            key: self.key,
            options: self.options,
            sort: self.sort,
            sync: self.sync,
            seq: self.seq,
            segment,
        }
    }
}
