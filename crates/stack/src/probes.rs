//! The stack's probe sites, declared once (DESIGN.md, "Probe events").
//! Spans are named `NAME.enter` / `NAME.exit` so converters pair them; the
//! five queues of the data path (DESIGN.md, "Data path and probe points")
//! each have an enqueue and a dequeue probe.

use probe::{Category, Kind, Layer};

probe::locations! {
    /// Every location the reference stack records at.
    pub static LOCATIONS;
    // Cost centres: buffers and copies.
    BUFFER_ALLOC_ENTER = ("buffer.alloc.enter", Layer::Host, Kind::SpanEnter, Category::Buffer, None);
    BUFFER_ALLOC_EXIT = ("buffer.alloc.exit", Layer::Host, Kind::SpanExit, Category::Buffer, None);
    BUFFER_FREE_ENTER = ("buffer.free.enter", Layer::Host, Kind::SpanEnter, Category::Buffer, None);
    BUFFER_FREE_EXIT = ("buffer.free.exit", Layer::Host, Kind::SpanExit, Category::Buffer, None);
    DATA_COPY_ENTER = ("data.copy.enter", Layer::Host, Kind::SpanEnter, Category::DataMove, None);
    DATA_COPY_EXIT = ("data.copy.exit", Layer::Host, Kind::SpanExit, Category::DataMove, None);
    PULLUP_ENTER = ("buffer.pullup.enter", Layer::Host, Kind::SpanEnter, Category::DataMove, None);
    PULLUP_EXIT = ("buffer.pullup.exit", Layer::Host, Kind::SpanExit, Category::DataMove, None);

    // The four queues.
    SEND_QUEUE_ENQUEUE = ("socket.send_queue.enqueue", Layer::Socket, Kind::Enqueue, Category::Socket, Some("send_socket"));
    SEND_QUEUE_DEQUEUE = ("socket.send_queue.dequeue", Layer::Socket, Kind::Dequeue, Category::Socket, Some("send_socket"));
    INTERFACE_QUEUE_ENQUEUE = ("iface.queue.enqueue", Layer::Link, Kind::Enqueue, Category::Link, Some("interface"));
    INTERFACE_QUEUE_DEQUEUE = ("iface.queue.dequeue", Layer::Link, Kind::Dequeue, Category::Link, Some("interface"));
    IP_INPUT_QUEUE_ENQUEUE = ("ip.input_queue.enqueue", Layer::Network, Kind::Enqueue, Category::ProtocolReceive, Some("ip_input"));
    IP_INPUT_QUEUE_DEQUEUE = ("ip.input_queue.dequeue", Layer::Network, Kind::Dequeue, Category::ProtocolReceive, Some("ip_input"));
    RECV_QUEUE_ENQUEUE = ("socket.recv_queue.enqueue", Layer::Socket, Kind::Enqueue, Category::Socket, Some("receive_socket"));
    RECV_QUEUE_DEQUEUE = ("socket.recv_queue.dequeue", Layer::Socket, Kind::Dequeue, Category::Socket, Some("receive_socket"));
    // The fifth queue: the device's transmit ring, where a saturated link
    // queues. A frame enters when the link accepts it and leaves when its
    // last bit has left (transmit complete), as a NIC frees a descriptor.
    DEVICE_QUEUE_ENQUEUE = ("device.queue.enqueue", Layer::Link, Kind::Enqueue, Category::Wire, Some("device"));
    DEVICE_QUEUE_DEQUEUE = ("device.queue.dequeue", Layer::Link, Kind::Dequeue, Category::Wire, Some("device"));

    // Functions on the common send path, head and end.
    SOCKET_SEND_ENTER = ("socket.send.enter", Layer::Socket, Kind::SpanEnter, Category::Socket, None);
    SOCKET_SEND_EXIT = ("socket.send.exit", Layer::Socket, Kind::SpanExit, Category::Socket, None);
    UDP_OUTPUT_ENTER = ("udp.output.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
    UDP_OUTPUT_EXIT = ("udp.output.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
    IPV6_OUTPUT_ENTER = ("ipv6.output.enter", Layer::Network, Kind::SpanEnter, Category::ProtocolSend, None);
    IPV6_OUTPUT_EXIT = ("ipv6.output.exit", Layer::Network, Kind::SpanExit, Category::ProtocolSend, None);
    IPV4_OUTPUT_ENTER = ("ipv4.output.enter", Layer::Network, Kind::SpanEnter, Category::ProtocolSend, None);
    IPV4_OUTPUT_EXIT = ("ipv4.output.exit", Layer::Network, Kind::SpanExit, Category::ProtocolSend, None);
    LINK_TRANSMIT_ENTER = ("link.transmit.enter", Layer::Link, Kind::SpanEnter, Category::Link, None);
    LINK_TRANSMIT_EXIT = ("link.transmit.exit", Layer::Link, Kind::SpanExit, Category::Link, None);

    // Functions on the common receive path, head and end.
    // How long the frame had waited for the receiver since it arrived
    // whole (aux, ns), just before its link.receive: the receive path is
    // timed from the arrival.
    LINK_RECEIVE_ARRIVAL = ("link.receive.arrival", Layer::Link, Kind::Point, Category::Wire, None);
    LINK_RECEIVE_ENTER = ("link.receive.enter", Layer::Link, Kind::SpanEnter, Category::Link, None);
    LINK_RECEIVE_EXIT = ("link.receive.exit", Layer::Link, Kind::SpanExit, Category::Link, None);
    IPV6_INPUT_ENTER = ("ipv6.input.enter", Layer::Network, Kind::SpanEnter, Category::ProtocolReceive, None);
    IPV6_INPUT_EXIT = ("ipv6.input.exit", Layer::Network, Kind::SpanExit, Category::ProtocolReceive, None);
    IPV4_INPUT_ENTER = ("ipv4.input.enter", Layer::Network, Kind::SpanEnter, Category::ProtocolReceive, None);
    IPV4_INPUT_EXIT = ("ipv4.input.exit", Layer::Network, Kind::SpanExit, Category::ProtocolReceive, None);
    IP_FORWARD_ENTER = ("ip.forward.enter", Layer::Network, Kind::SpanEnter, Category::ProtocolSend, None);
    IP_FORWARD_EXIT = ("ip.forward.exit", Layer::Network, Kind::SpanExit, Category::ProtocolSend, None);
    ICMPV6_INPUT_ENTER = ("icmpv6.input.enter", Layer::Network, Kind::SpanEnter, Category::ProtocolReceive, None);
    ICMPV6_INPUT_EXIT = ("icmpv6.input.exit", Layer::Network, Kind::SpanExit, Category::ProtocolReceive, None);
    ICMPV4_INPUT_ENTER = ("icmpv4.input.enter", Layer::Network, Kind::SpanEnter, Category::ProtocolReceive, None);
    ICMPV4_INPUT_EXIT = ("icmpv4.input.exit", Layer::Network, Kind::SpanExit, Category::ProtocolReceive, None);
    UDP_INPUT_ENTER = ("udp.input.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolReceive, None);
    UDP_INPUT_EXIT = ("udp.input.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolReceive, None);
    SOCKET_RECV_ENTER = ("socket.recv.enter", Layer::Socket, Kind::SpanEnter, Category::Socket, None);
    SOCKET_RECV_EXIT = ("socket.recv.exit", Layer::Socket, Kind::SpanExit, Category::Socket, None);

    // TCP: output (segment built), input (segment demultiplexed and
    // processed), ACK processing within input, timer handling, and each
    // retransmitted segment (`aux` 0: fast retransmit, 1: after a
    // timeout).
    TCP_OUTPUT_ENTER = ("tcp.output.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
    TCP_OUTPUT_EXIT = ("tcp.output.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
    TCP_INPUT_ENTER = ("tcp.input.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolReceive, None);
    TCP_INPUT_EXIT = ("tcp.input.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolReceive, None);
    TCP_ACK_ENTER = ("tcp.ack.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolReceive, None, detail = true);
    TCP_ACK_EXIT = ("tcp.ack.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolReceive, None, detail = true);
    TCP_TIMER_ENTER = ("tcp.timer.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
    TCP_TIMER_EXIT = ("tcp.timer.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
    TCP_RETRANSMIT = ("tcp.retransmit", Layer::Transport, Kind::Point, Category::ProtocolSend, None);

    // XTP, the same way: output (packet built), input (packet checked,
    // its context found and the packet processed), control processing
    // within input (CNTL, ECNTL, TCNTL: acknowledgement, alloc, spans),
    // timer handling (WTIMER, CTIMER, the quiet period), and each
    // retransmitted data packet (`aux` 0: selective, from ECNTL spans or
    // a short `rseq`; 1: go-back-n; 2: FIRST again under WTIMER).
    XTP_OUTPUT_ENTER = ("xtp.output.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
    XTP_OUTPUT_EXIT = ("xtp.output.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
    XTP_INPUT_ENTER = ("xtp.input.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolReceive, None);
    XTP_INPUT_EXIT = ("xtp.input.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolReceive, None);
    XTP_CONTROL_ENTER = ("xtp.control.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolReceive, None);
    XTP_CONTROL_EXIT = ("xtp.control.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolReceive, None);
    XTP_TIMER_ENTER = ("xtp.timer.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
    XTP_TIMER_EXIT = ("xtp.timer.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
    XTP_RETRANSMIT = ("xtp.retransmit", Layer::Transport, Kind::Point, Category::ProtocolSend, None);

    // Cost centres of the network and transport layers.
    CHECKSUM_ENTER = ("checksum.enter", Layer::Transport, Kind::SpanEnter, Category::Checksum, None);
    CHECKSUM_EXIT = ("checksum.exit", Layer::Transport, Kind::SpanExit, Category::Checksum, None);
    FRAGMENT_ENTER = ("ip.fragment.enter", Layer::Network, Kind::SpanEnter, Category::Fragmentation, None);
    FRAGMENT_EXIT = ("ip.fragment.exit", Layer::Network, Kind::SpanExit, Category::Fragmentation, None);
    REASSEMBLE_ENTER = ("ip.reassemble.enter", Layer::Network, Kind::SpanEnter, Category::Reassembly, None);
    REASSEMBLE_EXIT = ("ip.reassemble.exit", Layer::Network, Kind::SpanExit, Category::Reassembly, None);
    ROUTE_LOOKUP_ENTER = ("route.lookup.enter", Layer::Network, Kind::SpanEnter, Category::DataStructure, None);
    ROUTE_LOOKUP_EXIT = ("route.lookup.exit", Layer::Network, Kind::SpanExit, Category::DataStructure, None);
    NEIGHBOR_LOOKUP_ENTER = ("neighbor.lookup.enter", Layer::Network, Kind::SpanEnter, Category::DataStructure, None);
    NEIGHBOR_LOOKUP_EXIT = ("neighbor.lookup.exit", Layer::Network, Kind::SpanExit, Category::DataStructure, None);

    // Tunnels over the host's own IPv4 (`iface::tunnel`), the IPv6 link
    // layer: the encapsulation, whose span holds the encapsulating
    // `ipv4.output` (`aux` the tunnel interface), and the decapsulation
    // with its ingress checks, inside the outer `ipv4.input` (`aux` the
    // IPv4 interface it arrived on).
    TUNNEL_TRANSMIT_ENTER = ("tunnel.transmit.enter", Layer::Link, Kind::SpanEnter, Category::Link, None);
    TUNNEL_TRANSMIT_EXIT = ("tunnel.transmit.exit", Layer::Link, Kind::SpanExit, Category::Link, None);
    TUNNEL_RECEIVE_ENTER = ("tunnel.receive.enter", Layer::Link, Kind::SpanEnter, Category::Link, None);
    TUNNEL_RECEIVE_EXIT = ("tunnel.receive.exit", Layer::Link, Kind::SpanExit, Category::Link, None);

    // The tool's own work beside the link windows (never in them): a pcapng
    // capture's copy of a frame into its ring (`phy::capture`), subtracted
    // by the analysis from the windows that hold it.
    // A link knows no flow: flow 0, `aux` the direction (1 in, 2 out).
    CAPTURE_COPY_ENTER = ("capture.copy.enter", Layer::Link, Kind::SpanEnter, Category::Instrumentation, None);
    CAPTURE_COPY_EXIT = ("capture.copy.exit", Layer::Link, Kind::SpanExit, Category::Instrumentation, None);
    /// The threaded runner waking the host a virtual wire carried frames
    /// to (at the link's flush, after the poll's transmissions): the
    /// tool's own cost, not the stack's.
    RUNNER_WAKE_ENTER = ("runner.wake.enter", Layer::Host, Kind::SpanEnter, Category::Instrumentation, None);
    RUNNER_WAKE_EXIT = ("runner.wake.exit", Layer::Host, Kind::SpanExit, Category::Instrumentation, None);

    /// The application's message boundaries, for analysis that measures
    /// per message (the traffic tools record them): a message of `len`
    /// bytes about to be written (`aux`: its number), and received whole
    /// by the peer's application (`aux`: the same number).
    APP_MESSAGE_SEND = ("app.message.send", Layer::App, Kind::Point, Category::None, None);
    APP_MESSAGE_RECEIVED = ("app.message.received", Layer::App, Kind::Point, Category::None, None);

    /// A received packet carried the trace option: its flow is traced from
    /// here on (`aux` is the sender's flow id).
    TRACE_OPTION_SEEN = ("trace.option_seen", Layer::Network, Kind::Point, Category::None, None);
}
