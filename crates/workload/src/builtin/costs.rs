//! Per-operation CPU costs of the built-ins, at nominal speed. Each constant is
//! sourced in docs/CALIBRATION.md ("Per-operation CPU costs of workloads"); the
//! machine model adds context-switch, mm-switch and wakeup costs on top.

/// AF_UNIX stream write of 100 bytes incl. syscall, skb alloc, queueing and the
/// reader wakeup work: with the read, what `taskset -c 1 hackbench -g 1` takes
/// per message on the measuring guest (2.33 us), less what the model charges
/// for the message's lines (session 31: 0.922 x session 11's 1,070 / 1,210 ns,
/// once queued messages cool through the tasks' refills, F-031;
/// docs/CALIBRATION.md).
pub const UNIX_WRITE_NS: u64 = 986;
/// AF_UNIX stream read of 100 bytes (the dearer side, as measured per role).
pub const UNIX_READ_NS: u64 = 1_115;
/// pipe write of a small message (hackbench pipes pinned to one vCPU of the
/// measuring guest: 0.749 us of CPU per message without perf counters, which
/// the model meets over 10 seeds with these two costs and its page-slot pipe
/// (session 23: 0.9 x the earlier 360 / 325 ns, fitted while the model's
/// blocked writers were let in 40 per freed page; docs/CALIBRATION.md).
pub const PIPE_WRITE_NS: u64 = 324;
/// pipe read of a small message.
pub const PIPE_READ_NS: u64 = 292;
/// fork() of a small process (copy_process + mm dup), on the parent.
pub const FORK_PROCESS_NS: u64 = 30_000;
/// clone() of a thread (pthread_create), on the parent.
pub const FORK_THREAD_NS: u64 = 8_000;
/// do_exit() of a small task.
pub const EXIT_NS: u64 = 5_000;
/// Time a child spends between creation and its first blocking call
/// (hackbench ready-pipe write + poll setup).
pub const CHILD_SETUP_NS: u64 = 2_000;

/// Pipe geometry: 16 buffers of one 4 KiB page (PIPE_DEF_BUFFERS); small writes
/// merge into the tail page.
pub const PIPE_BUFFERS: u32 = 16;
pub const PAGE_SIZE: u32 = 4096;
/// AF_UNIX send buffer (net.core.wmem_default = 212992) and the truesize of a
/// small skb (data + sk_buff + shared info, ~768 B for 100 B of payload).
pub const UNIX_SNDBUF: u32 = 212_992;
pub const UNIX_SKB_OVERHEAD: u32 = 668;

/// Messages of `size` bytes that fit in a pipe.
pub fn pipe_capacity(size: u32) -> (u32, u32) {
    let per_page = (PAGE_SIZE / size.max(1)).max(1);
    (PIPE_BUFFERS * per_page, per_page)
}

/// Messages of `size` bytes that fit in an AF_UNIX stream socket's send buffer.
pub fn unix_capacity(size: u32) -> u32 {
    (UNIX_SNDBUF / (size + UNIX_SKB_OVERHEAD)).max(1)
}

/// Loopback TCP send of a small message incl. syscall, tcp_sendmsg, loopback
/// xmit and the receive softirq run on the sender's CPU (§6: 3-5 us per side,
/// from ~115K TCP_RR trans/s for one pair = 8.7 us per round trip).
pub const TCP_SEND_NS: u64 = 2_500;
/// Loopback TCP receive of a small message (tcp_recvmsg + copy), the rest of a side.
pub const TCP_RECV_NS: u64 = 1_000;
/// Loopback UDP send (no connection state, no ACK; [inferred] ~20% below TCP).
pub const UDP_SEND_NS: u64 = 2_000;
/// Loopback UDP receive.
pub const UDP_RECV_NS: u64 = 800;
/// Copying payload through the socket layer: ~10 GB/s memcpy, per KiB (§12.2:
/// 5-15 us per side for 5 KB messages).
pub const COPY_NS_PER_KB: u64 = 100;
/// netperf TCP_STREAM over loopback, measured on the development guest
/// (scripts/calibrate-tcpstream, crates/workload/tests/data/tcpstream-local.txt;
/// sender and receiver on separate vCPUs, the sender 100 % busy): one send()
/// costs its sender 0.86-0.91 us at 64 B, 1.07 at 1 KiB, 1.72-1.77 at 4 KiB and
/// 5.2-6.5 at 16 KiB (the copy into the skb, and the loopback transmit with the
/// receive softirq on the sender's CPU, per segment). The line through 64 B
/// and 16 KiB: 0.87 us + 0.283 us per KiB (4 KiB: 2.0 us, 15 % above).
pub const STREAM_SEND_NS: u64 = 870;
pub const STREAM_SEND_NS_PER_KB: u64 = 283;
/// One recv() of everything queued (netserver reads into a large buffer): 5.3-7.2 us
/// per call measured, 3-48 KiB per call, with 0.6-0.75 sleeps per call; less the
/// model's two switches per sleep (`local-guest`: 1.8 us each) [derived].
pub const STREAM_RECV_NS: u64 = 4_000;
/// The receiver's copy to user space of data the sender just wrote (hot in the
/// LLC): 0.02 us per KiB (5.7 us per call at 3 KiB, 6.5 at 48 KiB).
pub const STREAM_RECV_NS_PER_KB: u64 = 20;
/// A futex wake that finds a waiter (syscall + wake_q) or a lock-free list
/// push plus FUTEX_WAKE (schbench fpost).
pub const FUTEX_WAKE_NS: u64 = 1_500;

/// Socket costs of one message of `bytes` payload over loopback TCP.
pub fn tcp_send_ns(bytes: u64) -> u64 {
    TCP_SEND_NS + bytes * COPY_NS_PER_KB / 1024
}
pub fn tcp_recv_ns(bytes: u64) -> u64 {
    TCP_RECV_NS + bytes * COPY_NS_PER_KB / 1024
}
