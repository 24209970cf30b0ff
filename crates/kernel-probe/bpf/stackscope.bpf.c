// SPDX-License-Identifier: GPL-2.0 OR MIT
//
// stackscope's kernel probes: one tp_btf program per network tracepoint,
// each writing the 32-byte record of the trace schema (crates/probe,
// record.rs) into a BPF ring buffer for the flows user space registered.
//
// No vmlinux.h and no libbpf headers: the few kernel structs read here are
// declared below with only the fields used, marked preserve_access_index
// so CO-RE relocates every field against the running kernel's BTF
// (/sys/kernel/btf/vmlinux). Rebuild with build.sh (docs/kernel-probes.md).
//
// The location numbers (KP_*) are indices into the Rust table in
// src/locations.rs; the two lists must stay in the same order.

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u64 size_t;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) __typeof__(val) *name
#define CORE __attribute__((preserve_access_index))
#define INLINE static inline __attribute__((always_inline))

// Helper ids from include/uapi/linux/bpf.h (stable ABI).
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static __u32 (*bpf_get_smp_processor_id)(void) = (void *)8;
static __u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *src) = (void *)113;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)132;

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_RINGBUF 27
// Records are read by a periodic poll, never by a wakeup per event: a
// wakeup per event cost 1.7-5.2 us against 150-560 ns without (issue 19).
#define BPF_RB_NO_WAKEUP 1

// ---- The kernel structs read, only the fields used ------------------------

struct ns_common {
	unsigned int inum;
} CORE;

struct net {
	struct ns_common ns;
} CORE;

typedef struct {
	struct net *net;
} possible_net_t;

struct sock_common {
	__u16 skc_dport;
	__u16 skc_num;
	possible_net_t skc_net;
} CORE;

struct sock {
	struct sock_common __sk_common;
	__u16 sk_protocol;
} CORE;

struct tcp_sock {
	__u32 write_seq;
	__u32 copied_seq;
	__u32 rcv_nxt;
	__u32 snd_una;
	__u32 snd_nxt;
} CORE;

struct net_device {
	possible_net_t nd_net;
} CORE;

struct sk_buff {
	struct sock *sk;
	struct net_device *dev;
	char cb[48];
	unsigned int len;
	__u16 transport_header;
	__u16 network_header;
	unsigned char *head;
	unsigned char *data;
} CORE;

// TCP's control block in skb->cb (TCP_SKB_CB), filled by TCP input from
// the header; where the socket's backlog coalesced several ACKs into one
// skb, only this block has the newest acknowledgment, not the header.
struct tcp_skb_cb {
	__u8 tcp_flags;
	__u32 ack_seq;
} CORE;

struct iov_iter {
	size_t count;
} CORE;

struct msghdr {
	struct iov_iter msg_iter;
} CORE;

struct nsproxy {
	struct net *net_ns;
} CORE;

struct task_struct {
	struct nsproxy *nsproxy;
} CORE;

// The context of a cgroup sock_addr program (uapi struct bpf_sock_addr, a
// stable ABI read through the verifier's rewriting, so not CO-RE): only
// the fields up to the destination port. At run time the context is the
// kernel's struct bpf_sock_addr_kern, whose first field is the socket.
struct bpf_sock_addr {
	__u32 user_family;
	__u32 user_ip4;
	__u32 user_ip6[4];
	__u32 user_port;
};

// The context of a cgroup_skb program is declared as struct __sk_buff but
// is, at run time, the kernel's struct sk_buff (what the kfunc
// bpf_cast_to_kern_ctx would return), read here through CO-RE like a
// tp_btf argument. Its address is the same skb address the tracepoints see.
struct __sk_buff;

// Reads one field (CO-RE relocated) into dst; a failed read leaves dst 0.
#define READ(dst, src)                                                         \
	do {                                                                   \
		if (bpf_probe_read_kernel(&(dst), sizeof(dst), &(src)))        \
			__builtin_memset(&(dst), 0, sizeof(dst));              \
	} while (0)

// ---- Locations (indices into src/locations.rs) ----------------------------

enum {
	KP_TCP_SENDMSG_LOCKED,
	KP_SOCK_SEND_LENGTH,
	KP_QDISC_ENQUEUE,
	KP_QDISC_DEQUEUE,
	KP_NET_DEV_QUEUE,
	KP_NET_DEV_START_XMIT,
	KP_NET_DEV_XMIT,
	KP_TCP_SEQ,
	KP_NETIF_RX,
	KP_NETIF_RECEIVE_SKB,
	KP_TCP_PROBE,
	KP_SK_DATA_READY,
	KP_SKB_COPY_DATAGRAM_IOVEC,
	KP_SOCK_RECV_LENGTH,
	KP_CONSUME_SKB,
	KP_KFREE_SKB,
	KP_TCP_RETRANSMIT_SKB,
	KP_UDP_SENDMSG,
	KP_IP_FINISH_OUTPUT,
	KP_SK_FILTER,
	KP_TCP_ACK,
};

// ---- Maps ----------------------------------------------------------------

// The record of crates/probe/src/record.rs; tsc holds bpf_ktime_get_ns
// (CLOCK_MONOTONIC) until user space maps it onto the cycle counter.
struct record {
	__u64 tsc;
	__u64 aux;
	__u32 flow;
	__u32 len;
	__u16 loc;
	__u16 thread;
	__u32 reserved;
};

// A traced flow: its network namespace and its port pair, lower first, so
// both directions of a connection find the same entry.
struct flow_key {
	__u32 netns;
	__u16 port_lo;
	__u16 port_hi;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct flow_key);
	__type(value, __u32);
} flows SEC(".maps");

// IP fragments carry no ports after the first: the first fragment of a
// traced flow's datagram records its identification here, per namespace,
// so the later fragments (same id) find the flow. LRU: old ids age out.
struct frag_key {
	__u32 netns;
	__u32 id;
	__u32 family;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct frag_key);
	__type(value, __u32);
} frags SEC(".maps");

// Events lost because the ring was full, per CPU.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

// ---- Recording -------------------------------------------------------------

INLINE __u16 bswap16(__u16 v) { return (__u16)((v >> 8) | (v << 8)); }

INLINE __u32 bswap32(__u32 v)
{
	return ((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >> 8) & 0xff00) | (v >> 24);
}

// The flow id of a traced flow, 0 for any other: one hash lookup, and no
// ring space, for every untraced packet.
INLINE __u32 lookup_flow(__u32 netns, __u16 a, __u16 b)
{
	struct flow_key key = {
		.netns = netns,
		.port_lo = a < b ? a : b,
		.port_hi = a < b ? b : a,
	};
	__u32 *id = bpf_map_lookup_elem(&flows, &key);
	return id ? *id : 0;
}

INLINE void emit(__u16 loc, __u32 flow, __u32 len, __u64 aux, __u64 ts)
{
	struct record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		__u32 zero = 0;
		__u64 *count = bpf_map_lookup_elem(&dropped, &zero);
		// Atomic: a program in an interrupt on this CPU may count too.
		if (count)
			__sync_fetch_and_add(count, 1);
		return;
	}
	r->tsc = ts;
	r->aux = aux;
	r->flow = flow;
	r->len = len;
	r->loc = loc;
	r->thread = (__u16)bpf_get_smp_processor_id();
	r->reserved = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

INLINE __u32 net_inum(struct net *net)
{
	__u32 inum = 0;
	if (net)
		READ(inum, net->ns.inum);
	return inum;
}

// The namespace of the task running the hook (process context: a send or a
// receive system call).
INLINE __u32 current_netns(void)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct nsproxy *ns = 0;
	struct net *net = 0;
	READ(ns, task->nsproxy);
	if (ns)
		READ(net, ns->net_ns);
	return net_inum(net);
}

INLINE __u32 dev_netns(struct net_device *dev)
{
	struct net *net = 0;
	if (dev)
		READ(net, dev->nd_net.net);
	return net_inum(net);
}

// A socket's flow id, its namespace and whether it is TCP.
INLINE __u32 sock_flow(struct sock *sk, int *is_tcp)
{
	struct net *net = 0;
	__u16 num = 0, dport = 0, proto = 0;
	READ(net, sk->__sk_common.skc_net.net);
	READ(num, sk->__sk_common.skc_num);
	READ(dport, sk->__sk_common.skc_dport);
	READ(proto, sk->sk_protocol);
	*is_tcp = proto == 6;
	return lookup_flow(net_inum(net), num, bswap16(dport));
}

// What the IP and transport headers of a packet say.
struct packet {
	__u32 flow;
	__u32 tcp_seq;
	int is_tcp;
};

// The flow of an IP fragment: the first (offset 0, transport header
// behind it) is looked up by ports and, if traced, records its id; a
// later one finds the flow by its id.
INLINE __u32 fragment_flow(__u32 netns, __u32 family, __u32 id, int first, unsigned char *l4)
{
	struct frag_key key = {.netns = netns, .id = id, .family = family};
	if (!first) {
		__u32 *flow = bpf_map_lookup_elem(&frags, &key);
		return flow ? *flow : 0;
	}
	__u16 ports[2];
	if (bpf_probe_read_kernel(ports, sizeof(ports), l4))
		return 0;
	__u32 flow = lookup_flow(netns, bswap16(ports[0]), bswap16(ports[1]));
	if (flow)
		bpf_map_update_elem(&frags, &key, &flow, 0);
	return flow;
}

// Parses the packet's headers: at the network header when `at_data` is 0
// (set on every send path and after IP input), at skb->data when it is 1
// (device receive, where the link header has just been pulled). An IP
// fragment is joined to its datagram's flow by its identification.
INLINE int skb_packet(struct sk_buff *skb, int at_data, __u32 netns, struct packet *p)
{
	unsigned char *ip = 0;
	if (at_data) {
		READ(ip, skb->data);
	} else {
		unsigned char *head = 0;
		__u16 nh = 0;
		READ(head, skb->head);
		READ(nh, skb->network_header);
		if (!head || nh == 0xffff)
			return -1;
		ip = head + nh;
	}
	__u8 first = 0, proto = 0;
	if (!ip || bpf_probe_read_kernel(&first, 1, ip))
		return -1;
	unsigned char *l4;
	// -1: not a fragment; else the fragment's identification.
	__s64 frag_id = -1;
	int frag_first = 0;
	if ((first >> 4) == 6) {
		if (bpf_probe_read_kernel(&proto, 1, ip + 6))
			return -1;
		l4 = ip + 40;
		// The one extension header followed: a Fragment header (44).
		if (proto == 44) {
			__u8 fh[8];
			if (bpf_probe_read_kernel(fh, sizeof(fh), l4))
				return -1;
			proto = fh[0];
			frag_first = ((fh[2] << 8 | fh[3]) & 0xfff8) == 0;
			frag_id = (__u32)fh[4] << 24 | (__u32)fh[5] << 16 | (__u32)fh[6] << 8 | fh[7];
			l4 += 8;
		}
	} else if ((first >> 4) == 4) {
		__u8 h[4];
		if (bpf_probe_read_kernel(h, sizeof(h), ip + 4) ||
		    bpf_probe_read_kernel(&proto, 1, ip + 9))
			return -1;
		__u16 frag = h[2] << 8 | h[3];
		// More fragments (0x2000) or an offset: a fragment.
		if (frag & 0x3fff) {
			frag_first = (frag & 0x1fff) == 0;
			frag_id = h[0] << 8 | h[1];
		}
		l4 = ip + (first & 0xf) * 4;
	} else {
		return -1;
	}
	if (proto != 6 && proto != 17)
		return -1;
	p->tcp_seq = 0;
	p->is_tcp = proto == 6;
	if (frag_id >= 0) {
		p->flow = fragment_flow(netns, first >> 4, (__u32)frag_id, frag_first, l4);
		// A TCP segment is never fragmented here; a later fragment has
		// no header to read a sequence from.
		return p->flow ? 0 : -1;
	}
	__u16 ports[2];
	if (bpf_probe_read_kernel(ports, sizeof(ports), l4))
		return -1;
	p->flow = lookup_flow(netns, bswap16(ports[0]), bswap16(ports[1]));
	if (p->flow && p->is_tcp) {
		__u32 seq = 0;
		bpf_probe_read_kernel(&seq, sizeof(seq), l4 + 4);
		p->tcp_seq = bswap32(seq);
	}
	return p->flow ? 0 : -1;
}

// The namespace an skb belongs to outside any socket: its device's, or the
// running task's when it has none.
INLINE __u32 skb_netns(struct sk_buff *skb)
{
	struct net_device *dev = 0;
	READ(dev, skb->dev);
	__u32 ns = dev_netns(dev);
	return ns ? ns : current_netns();
}

INLINE __u32 skb_len(struct sk_buff *skb)
{
	__u32 len = 0;
	READ(len, skb->len);
	return len;
}

// One skb event: aux is the skb's address, which joins the events of one
// packet within its lifetime.
INLINE void skb_event(__u16 loc, struct sk_buff *skb, int at_data, __u32 netns, __u32 len)
{
	struct packet p;
	if (skb_packet(skb, at_data, netns, &p))
		return;
	emit(loc, p.flow, len, (__u64)skb, bpf_ktime_get_ns());
}

// A tracepoint whose event is one skb's, the skb its argument `arg`: its
// namespace from its device (or the running task), its length from it.
#define SKB_TRACEPOINT(name, loc, arg, at_data)                                \
	SEC("tp_btf/" #name)                                                   \
	int name(__u64 *ctx)                                                   \
	{                                                                      \
		struct sk_buff *skb = (void *)ctx[arg];                        \
		if (skb)                                                       \
			skb_event(loc, skb, at_data, skb_netns(skb), skb_len(skb)); \
		return 0;                                                      \
	}

// sock_send_length / sock_recv_length (sk, ret, flags): a send or receive
// call returns; len = bytes, aux = the TCP sequence field `seq` after it
// (write_seq, copied_seq), 0 for UDP.
#define SOCK_LENGTH_TRACEPOINT(name, loc, seq_field)                           \
	SEC("tp_btf/" #name)                                                   \
	int name(__u64 *ctx)                                                   \
	{                                                                      \
		struct sock *sk = (void *)ctx[0];                              \
		int ret = (int)ctx[1];                                         \
		int tcp;                                                       \
		__u32 flow = sock_flow(sk, &tcp);                              \
		if (!flow)                                                     \
			return 0;                                              \
		__u32 seq = 0;                                                 \
		if (tcp)                                                       \
			READ(seq, ((struct tcp_sock *)sk)->seq_field);         \
		emit(loc, flow, ret > 0 ? ret : 0, seq, bpf_ktime_get_ns());   \
		return 0;                                                      \
	}

// ---- Send path -------------------------------------------------------------

// tcp_sendmsg_locked(sk, msg, skb, size_goal): a message enters the
// socket's send queue; aux = write_seq, the TCP sequence of its first byte.
SEC("tp_btf/tcp_sendmsg_locked")
int tcp_sendmsg_locked(__u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct msghdr *msg = (void *)ctx[1];
	int tcp;
	__u32 flow = sock_flow(sk, &tcp);
	if (!flow)
		return 0;
	size_t count = 0;
	__u32 seq = 0;
	READ(count, msg->msg_iter.count);
	READ(seq, ((struct tcp_sock *)sk)->write_seq);
	emit(KP_TCP_SENDMSG_LOCKED, flow, (__u32)count, seq, bpf_ktime_get_ns());
	return 0;
}

// The send call returns.
SOCK_LENGTH_TRACEPOINT(sock_send_length, KP_SOCK_SEND_LENGTH, write_seq)

// qdisc_enqueue(qdisc, txq, skb) / qdisc_dequeue(qdisc, txq, packets, skb):
// only when a packet really queues (noqueue on lo and veth never does).
SKB_TRACEPOINT(qdisc_enqueue, KP_QDISC_ENQUEUE, 2, 0)
SKB_TRACEPOINT(qdisc_dequeue, KP_QDISC_DEQUEUE, 3, 0)

// net_dev_queue(skb): __dev_queue_xmit, the packet handed to the device
// layer. A TCP segment also gets a KP_TCP_SEQ record binding the skb
// address (aux) to its sequence number (len), so a packet's events join the
// message's across layers and hosts.
SEC("tp_btf/net_dev_queue")
int net_dev_queue(__u64 *ctx)
{
	struct sk_buff *skb = (void *)ctx[0];
	struct packet p;
	if (skb_packet(skb, 0, skb_netns(skb), &p))
		return 0;
	__u64 ts = bpf_ktime_get_ns();
	if (p.is_tcp)
		emit(KP_TCP_SEQ, p.flow, p.tcp_seq, (__u64)skb, ts);
	emit(KP_NET_DEV_QUEUE, p.flow, skb_len(skb), (__u64)skb, ts);
	return 0;
}

// net_dev_start_xmit(skb, dev): the driver is called.
SEC("tp_btf/net_dev_start_xmit")
int net_dev_start_xmit(__u64 *ctx)
{
	struct sk_buff *skb = (void *)ctx[0];
	struct net_device *dev = (void *)ctx[1];
	skb_event(KP_NET_DEV_START_XMIT, skb, 0, dev_netns(dev), skb_len(skb));
	return 0;
}

// net_dev_xmit(skb, rc, dev, skb_len): the driver returned. The skb may
// already be freed (veth hands it to the peer), so its headers are read
// only for the flow, and its length comes from the argument.
SEC("tp_btf/net_dev_xmit")
int net_dev_xmit(__u64 *ctx)
{
	struct sk_buff *skb = (void *)ctx[0];
	struct net_device *dev = (void *)ctx[2];
	__u32 len = (__u32)ctx[3];
	skb_event(KP_NET_DEV_XMIT, skb, 0, dev_netns(dev), len);
	return 0;
}

// tcp_retransmit_skb(sk, skb): a segment sent again.
SEC("tp_btf/tcp_retransmit_skb")
int tcp_retransmit_skb(__u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct sk_buff *skb = (void *)ctx[1];
	int tcp;
	__u32 flow = sock_flow(sk, &tcp);
	if (flow)
		emit(KP_TCP_RETRANSMIT_SKB, flow, skb_len(skb), (__u64)skb, bpf_ktime_get_ns());
	return 0;
}

// ---- Receive path ------------------------------------------------------------

// netif_rx(skb): a frame enters the CPU's backlog (veth's receive path).
SKB_TRACEPOINT(netif_rx, KP_NETIF_RX, 0, 1)

// netif_receive_skb(skb): the frame leaves the backlog for the protocols.
SKB_TRACEPOINT(netif_receive_skb, KP_NETIF_RECEIVE_SKB, 0, 1)

// tcp_probe(sk, skb): TCP input of an established connection, at the
// start of tcp_rcv_established; len = the segment's bytes at this point
// (TCP header included). Also binds the skb to its sequence number
// (KP_TCP_SEQ), as net_dev_queue does on send.
//
// And the send queue's dequeue (KP_TCP_ACK): the tracepoint fires before
// tcp_ack runs, so the socket's snd_una is still the value before this
// segment; the segment's acknowledgment number says what it frees, read
// from TCP's control block as tcp_ack reads it (an skb of the socket's
// backlog may carry ACKs coalesced into it, the header only the first's).
// An ACK that advances snd_una (and acknowledges nothing unsent, which
// tcp_ack would reject) is recorded: len = the acknowledgment number, aux
// = snd_una before it, so len - aux bytes leave the send queue here.
SEC("tp_btf/tcp_probe")
int tcp_probe(__u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	struct sk_buff *skb = (void *)ctx[1];
	int tcp;
	__u32 flow = sock_flow(sk, &tcp);
	if (!flow)
		return 0;
	unsigned char *head = 0;
	__u16 th = 0;
	__u32 seq = 0;
	READ(head, skb->head);
	READ(th, skb->transport_header);
	if (!head || th == 0xffff || bpf_probe_read_kernel(&seq, sizeof(seq), head + th + 4))
		return 0;
	__u64 ts = bpf_ktime_get_ns();
	emit(KP_TCP_SEQ, flow, bswap32(seq), (__u64)skb, ts);
	emit(KP_TCP_PROBE, flow, skb_len(skb), (__u64)skb, ts);
	struct tcp_skb_cb *cb = (void *)skb->cb;
	__u8 flags = 0;
	__u32 ack = 0, una = 0, nxt = 0;
	READ(flags, cb->tcp_flags);
	if (!(flags & 0x10))
		return 0;
	READ(ack, cb->ack_seq);
	READ(una, ((struct tcp_sock *)sk)->snd_una);
	READ(nxt, ((struct tcp_sock *)sk)->snd_nxt);
	if ((int)(ack - una) > 0 && (int)(ack - nxt) <= 0)
		emit(KP_TCP_ACK, flow, ack, una, ts);
	return 0;
}

// sk_data_ready(sk): data queued on the socket, the reader woken; aux =
// rcv_nxt, the sequence after the last byte queued (TCP), 0 (UDP).
SEC("tp_btf/sk_data_ready")
int sk_data_ready(__u64 *ctx)
{
	struct sock *sk = (void *)ctx[0];
	int tcp;
	__u32 flow = sock_flow(sk, &tcp);
	if (!flow)
		return 0;
	__u32 seq = 0;
	if (tcp)
		READ(seq, ((struct tcp_sock *)sk)->rcv_nxt);
	emit(KP_SK_DATA_READY, flow, 0, seq, bpf_ktime_get_ns());
	return 0;
}

// skb_copy_datagram_iovec(skb, len): a packet's data copied to the reader.
SEC("tp_btf/skb_copy_datagram_iovec")
int skb_copy_datagram_iovec(__u64 *ctx)
{
	struct sk_buff *skb = (void *)ctx[0];
	int len = (int)ctx[1];
	skb_event(KP_SKB_COPY_DATAGRAM_IOVEC, skb, 0, current_netns(), len > 0 ? len : 0);
	return 0;
}

// The receive call returns.
SOCK_LENGTH_TRACEPOINT(sock_recv_length, KP_SOCK_RECV_LENGTH, copied_seq)

// ---- End of an skb's life -----------------------------------------------------

// consume_skb(skb, location): freed after use; closes the skb address.
SKB_TRACEPOINT(consume_skb, KP_CONSUME_SKB, 0, 0)

// kfree_skb(skb, location, reason, rx_sk): dropped; len = the drop reason
// (enum skb_drop_reason), not a byte count.
SEC("tp_btf/kfree_skb")
int kfree_skb(__u64 *ctx)
{
	struct sk_buff *skb = (void *)ctx[0];
	__u32 reason = (__u32)ctx[2];
	skb_event(KP_KFREE_SKB, skb, 0, skb_netns(skb), reason);
	return 0;
}

// ---- IP output, transport input, the UDP send call (cgroup programs) ------

// A cgroup program's context as a plain kernel address: copied through the
// stack with a probe read, the verifier sees a number, not its context
// pointer, so the fields are read like a tracepoint argument's (no rules
// on context pointer arithmetic apply).
INLINE __u64 kernel_address(void *ctx)
{
	__u64 address = 0;
	void *slot = ctx;
	bpf_probe_read_kernel(&address, sizeof(address), &slot);
	return address;
}
//
// No tracepoint marks IP output or input (no ipv6: group) and aya cannot
// load netfilter programs, so these attach to the run's cgroup (v2): they
// see the sockets created by its processes. They must return 1 (allow).

// ip_finish_output / ip6_finish_output: the cgroup's egress hook, after
// IP output's netfilter hooks and before fragmentation and the neighbour
// layer; aux = the skb, as at net_dev_queue.
SEC("cgroup_skb/egress")
int ip_finish_output(struct __sk_buff *ctx)
{
	struct sk_buff *skb = (void *)kernel_address(ctx);
	skb_event(KP_IP_FINISH_OUTPUT, skb, 0, skb_netns(skb), skb_len(skb));
	return 1;
}

// sk_filter: the cgroup's ingress hook, run by TCP and UDP input on the
// socket found for the packet (tcp_v4/v6_rcv, udp(v6)_queue_rcv_one_skb),
// after IP input (and reassembly) and the socket lookup; aux = the skb.
SEC("cgroup_skb/ingress")
int sk_filter(struct __sk_buff *ctx)
{
	struct sk_buff *skb = (void *)kernel_address(ctx);
	skb_event(KP_SK_FILTER, skb, 0, skb_netns(skb), skb_len(skb));
	return 1;
}

// udp(v6)_sendmsg of an unconnected socket (a destination given): the
// cgroup's sendmsg hook, at the start of the send, before the datagram is
// built. The flow from the socket's port and the destination's; len 0.
INLINE int udp_sendmsg(struct bpf_sock_addr *ctx)
{
	struct sock *sk = 0;
	// The context is struct bpf_sock_addr_kern: its first field, the socket.
	if (bpf_probe_read_kernel(&sk, sizeof(sk), (void *)kernel_address(ctx)) || !sk)
		return 1;
	struct net *net = 0;
	__u16 num = 0;
	READ(net, sk->__sk_common.skc_net.net);
	READ(num, sk->__sk_common.skc_num);
	__u32 flow = lookup_flow(net_inum(net), num, bswap16((__u16)ctx->user_port));
	if (flow)
		emit(KP_UDP_SENDMSG, flow, 0, 0, bpf_ktime_get_ns());
	return 1;
}

SEC("cgroup/sendmsg6")
int udp_sendmsg6(struct bpf_sock_addr *ctx) { return udp_sendmsg(ctx); }

SEC("cgroup/sendmsg4")
int udp_sendmsg4(struct bpf_sock_addr *ctx) { return udp_sendmsg(ctx); }

char LICENSE[] SEC("license") = "GPL";
