//! What the host and the kernels agree on: the [`Plan`] (sizes and buffer
//! addresses, written to device memory once), a received row's [`RowSrc`],
//! and the size rules of every buffer. Plain functions, used on both sides.

use nvshmem_device::bytemuck::{Pod, Zeroable};

/// Most PEs a job may have (a token's destinations are a `u32` bit mask).
pub const MAX_PES: u32 = 32;
/// Most experts per PE (the kernels keep per-expert counts in shared memory).
pub const MAX_LOCAL_EXPERTS: u32 = 256;
/// Most `(bucket, source PE)` pairs (shared-memory prefix sums).
pub const MAX_UNITS: u32 = 2048;
/// Most experts per token.
pub const MAX_TOPK: u32 = 16;
/// Channels per fp8 scale, as DeepEP.
pub const FP8_GROUP: u32 = 128;
/// Threads per block of every MoE kernel.
pub const THREADS: u32 = 256;
/// Bit of a count word that says the sending PE refused its call.
pub const REFUSED_BIT: u32 = 1 << 31;
/// Bit of the status word that says some token named an expert out of range.
pub const BAD_EXPERT_BIT: u64 = 1 << 63;

/// Everything the kernels need, in device memory (one per [`Plan`] owner).
/// Addresses are this PE's addresses of symmetric buffers (the same on every
/// PE) or of buffers only this PE touches.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
#[bytemuck(crate = "nvshmem_device::bytemuck")]
pub struct Plan {
    /// Symmetric: `[buckets][n_pes][max_tokens]` messages of `msg_bytes`, where peers put.
    pub stage: u64,
    /// Symmetric: `[buckets][n_pes][count_words]` u32 count messages.
    pub count_in: u64,
    /// Symmetric: `[buckets][n_pes]` u64 signals, +1 per count message.
    pub cnt_sig: u64,
    /// Symmetric: `[buckets][n_pes]` u64 signals, +1 per data message.
    pub data_sig: u64,
    /// Symmetric: `[max_tokens][topk][hidden]` bf16 expert outputs coming back.
    pub comb: u64,
    /// Symmetric: `[n_pes]` u64 signals, +1 per row coming back.
    pub comb_sig: u64,
    /// Symmetric: one u64, bit `p` set when PE `p` refused a call, [`BAD_EXPERT_BIT`].
    pub status: u64,
    /// Local: `[max_tokens]` messages, packed before they are sent.
    pub send_buf: u64,
    /// Local: u32 slot counters per destination (`n_pes` normal, `experts` low-latency).
    pub send_fill: u64,
    /// Local: `[rows_cap][hidden]` received rows, bf16 (or fp8 bytes).
    pub recv_x: u64,
    /// Local: `[rows_cap][hidden / 128]` f32 scales (fp8 only).
    pub recv_scales: u64,
    /// Local: `[rows_cap]` [`RowSrc`] of each received row.
    pub row_src: u64,
    /// Local: `[local_experts]` u32 rows per local expert (output).
    pub expert_count: u64,
    /// Local: `[local_experts + 1]` u32 first row of each local expert (output).
    pub expert_offset: u64,
    /// Local: `[local_experts]` u32 slot counters of the receive side.
    pub fill: u64,
    /// Local: u64 `[units]` count signals seen, `[units]` data signals seen, `[n_pes]` combine signals seen.
    pub seen: u64,
    /// Local: `[n_pes]` u32 rows each PE sends back in the next combine.
    pub expect_rows: u64,
    /// Local: `[4]` u32 "last block" counters, one per kernel.
    pub done: u64,
    /// Local, the unfused baseline only (else 0): `[n_pes][max_tokens]` messages by destination.
    pub base_send: u64,
    /// Local, the unfused baseline only (else 0): `[n_pes][count_words]` u32 count messages by destination.
    pub base_counts: u64,
    /// Channels per token.
    pub hidden: u32,
    /// Experts in the job.
    pub experts: u32,
    /// Experts per token.
    pub topk: u32,
    /// Tokens per PE per call, at most.
    pub max_tokens: u32,
    /// PEs in the job.
    pub n_pes: u32,
    /// Experts per PE (`experts / n_pes`; expert `e` lives on PE `e / local_experts`).
    pub local_experts: u32,
    /// 1: low-latency mode (one message per token and expert, straight into per-expert slots).
    pub low_latency: u32,
    /// 1: dispatch sends fp8 e4m3 with a scale per 128 channels.
    pub fp8: u32,
    /// Each local expert's rows start at a multiple of this (normal mode).
    pub align: u32,
    /// Bytes per message (payload, then [`MsgHead`], the top-k ids and weights).
    pub msg_bytes: u32,
    /// Staging buckets per source: 1 (normal) or `local_experts` (low-latency).
    pub buckets: u32,
    /// u32 words per count message: 1 + `local_experts`.
    pub count_words: u32,
    /// Rows of the receive buffers.
    pub rows_cap: u32,
    /// Padding to 8 bytes.
    pub pad: u32,
}

/// Where a received row came from: the source PE, its token and top-k slot,
/// and that slot's weight.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[bytemuck(crate = "nvshmem_device::bytemuck")]
pub struct RowSrc {
    /// Source PE.
    pub pe: u32,
    /// Token on the source PE.
    pub tok: u32,
    /// Top-k slot of this expert in the token's list.
    pub k: u32,
    /// The token's weight for this expert.
    pub w: f32,
}

/// The head of a message's metadata: the source token and, in low-latency
/// mode, the top-k slot the message is for (`u32::MAX` in normal mode).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
#[bytemuck(crate = "nvshmem_device::bytemuck")]
pub struct MsgHead {
    /// Token on the source PE.
    pub tok: u32,
    /// Top-k slot (low-latency) or `u32::MAX`.
    pub k: u32,
}

/// Bytes of a message's payload: `2 · hidden` (bf16), or `hidden` fp8 bytes
/// and a f32 scale per 128 channels.
pub const fn payload_bytes(hidden: u32, fp8: bool) -> u32 {
    if fp8 {
        hidden + 4 * (hidden / FP8_GROUP)
    } else {
        2 * hidden
    }
}

/// Bytes of a message: payload, [`MsgHead`], `topk` i32 ids and f32
/// weights, rounded up to 16 (the copies move 16 bytes per access).
pub const fn msg_bytes(hidden: u32, topk: u32, fp8: bool) -> u32 {
    (payload_bytes(hidden, fp8) + 8 + 8 * topk).next_multiple_of(16)
}

/// Rows the receive buffers need: low-latency, every source's `max_tokens`
/// for every local expert; normal, at most `min(topk, local_experts)` rows
/// per received token plus the alignment padding of each expert.
pub const fn rows_cap(
    n_pes: u32,
    local_experts: u32,
    topk: u32,
    max_tokens: u32,
    low_latency: bool,
    align: u32,
) -> u64 {
    let (p, l, t) = (n_pes as u64, local_experts as u64, max_tokens as u64);
    if low_latency {
        l * p * t
    } else {
        let k = if (topk as u64) < l { topk as u64 } else { l };
        p * t * k + l * (align as u64 - 1)
    }
}

/// The expert of top-k slot `k` of a token whose ids are `ids`, or `None`
/// when the slot routes nowhere: a negative id, an id `>= experts` (the
/// kernels flag [`BAD_EXPERT_BIT`]), or an id repeated from an earlier slot
/// (a token goes to each expert once, with its first slot's weight).
#[inline(always)]
pub fn slot_expert(ids: &[i32], k: usize, experts: u32) -> Option<u32> {
    let e = ids[k];
    if e < 0 || e as u32 >= experts {
        return None;
    }
    let mut j = 0;
    while j < k {
        if ids[j] == e {
            return None;
        }
        j += 1;
    }
    Some(e as u32)
}
