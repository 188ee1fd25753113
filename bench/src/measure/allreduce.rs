//! The all-reduce cases: the example's kernels against NCCL, on every PE.

use super::*;
use example_allreduce::{Algo, THREADS};

impl Bench<'_> {
    /// Three rounds of fill, all-reduce with `call`, and check (on the
    /// device, and the first 4096 elements on the host): the wrong elements,
    /// and for the in-kernel all-reduce of `algo`, its signal words that the
    /// call did not set (the only sign of a no-op at 1 PE).
    fn ar_verify(&self, n: usize, call: &dyn Fn() -> Res<()>, algo: Option<Algo>) -> Res<u64> {
        let mut wrong = 0;
        for _ in 0..3 {
            self.ar.clear_errors()?;
            let seed = self.ar.fill(n)?;
            call()?;
            self.ar.check(n, seed, 0)?;
            wrong += self.ar.device_errors()? + self.ar.host_errors(n.min(4096), seed)?;
            if let Some(algo) = algo {
                wrong += self.ar.signal_errors(algo, n)?;
            }
        }
        Ok(wrong)
    }

    /// Verifies `call` ([`ar_verify`](Self::ar_verify)) and times it (not in
    /// check mode): every PE's wrong elements and the slowest PE's time.
    fn ar_measure(
        &self,
        n: usize,
        call: &dyn Fn() -> Res<()>,
        algo: Option<Algo>,
    ) -> Res<(u64, f64)> {
        self.barrier()?;
        let wrong = self.ar_verify(n, call, algo)?;
        self.barrier()?;
        let t = if self.opts.check {
            0.0
        } else {
            self.time(call)?
        };
        self.agree(wrong, t)
    }

    pub(super) fn allreduce(&mut self) -> Res<()> {
        if !self.wanted("allreduce") {
            return Ok(());
        }
        let threshold = oneshot_threshold(self.nv.n_pes()) as u64;
        let grid = self.ar.agreement;
        let nccl = if self.opts.nccl {
            self.nccl_comm()?
        } else {
            None
        };
        if self.lead() {
            println!(
                "  all-reduce: grid up to {} x {THREADS}, one-shot up to {}, peers {}",
                grid.max_grid,
                human(threshold),
                if grid.all_direct {
                    "direct"
                } else {
                    "partly by get/put"
                }
            );
        }
        for &bytes in &self.ar_sizes.clone() {
            let n = (bytes / 4) as usize;
            let algo = Algo::by_size(bytes as usize, threshold as usize);
            for ii in 0..self.impls.len() {
                let name = self.impls[ii].name.clone();
                let k = self.impls[ii].kernel(match algo {
                    Algo::OneShot => "allreduce_oneshot",
                    Algo::RsAg => "allreduce_rs_ag",
                })?;
                let call = || self.ar.call_with(&k, algo, n);
                let (wrong, t) = self.ar_measure(n, &call, Some(algo))?;
                let gbs = bytes as f64 / t / 1e9;
                self.record(
                    "allreduce",
                    algo.name(),
                    bytes,
                    &name,
                    t,
                    gbs,
                    "GB/s",
                    wrong,
                );
            }
            if let Some(comm) = nccl {
                let call = || nccl_all_reduce(comm, &self.ar.data, n, self.nv);
                let (wrong, t) = self.ar_measure(n, &call, None)?;
                let gbs = bytes as f64 / t / 1e9;
                if self.nv.n_pes() == 1 {
                    // One rank's in-place sum is its input: nothing shows
                    // that NCCL ran, so the row checks nothing.
                    self.record_unchecked("allreduce", "nccl", bytes, "nccl", t, gbs, "GB/s");
                } else {
                    self.record("allreduce", "nccl", bytes, "nccl", t, gbs, "GB/s", wrong);
                }
            }
        }
        if let Some(comm) = nccl {
            // SAFETY: created by nccl_comm; no call is in flight after the barrier.
            self.barrier()?;
            let _ = unsafe { cudarc::nccl::result::comm_destroy(comm) };
        }
        self.barrier()
    }

    /// An NCCL communicator over every PE, or `None` (with the reason in
    /// `info`) when NCCL is missing or several PEs share a GPU. Collective.
    pub(super) fn nccl_comm(&mut self) -> Res<Option<cudarc::nccl::sys::ncclComm_t>> {
        let np = self.nv.n_pes();
        let lib_ok = ["libnccl.so", "libnccl.so.2"]
            .iter()
            // SAFETY: loading NCCL runs no initializer with preconditions.
            .any(|n| unsafe { libloading::Library::new(n) }.is_ok());
        let (all_ok, _) = self.agree((!lib_ok) as u64, 0.0)?;
        if all_ok != 0 {
            self.info.push((
                "NCCL".into(),
                "not measured: libnccl.so not found on the library path".into(),
            ));
            return Ok(None);
        }
        if np > 1 && !self.ar.agreement.distinct_gpus {
            self.info.push((
                "NCCL".into(),
                format!(
                    "not measured with {np} PEs: {} PEs share a GPU, which NCCL refuses (needs one GPU per PE)",
                    self.ar.agreement.pes_per_gpu
                ),
            ));
            return Ok(None);
        }
        // Rank 0's unique id (128 bytes) to everyone.
        let mut words = [0u64; 16];
        if self.lead() {
            let id = cudarc::nccl::result::get_uniqueid()
                .map_err(|e| format!("ncclGetUniqueId: {e:?}"))?;
            // SAFETY: 128 plain bytes.
            let bytes: [u8; 128] = unsafe { std::mem::transmute(id.internal) };
            for (i, w) in words.iter_mut().enumerate() {
                *w = u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
            }
        }
        let all = self.ex.all_gather(self.nv, &words)?;
        let mut bytes = [0u8; 128];
        for (i, w) in all[0].iter().enumerate() {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        // SAFETY: 128 plain bytes.
        let id = cudarc::nccl::sys::ncclUniqueId {
            internal: unsafe { std::mem::transmute::<[u8; 128], [std::ffi::c_char; 128]>(bytes) },
        };
        let mut comm = std::ptr::null_mut();
        // SAFETY: a valid out pointer; every rank calls it with the same id.
        unsafe { cudarc::nccl::result::comm_init_rank(&mut comm, np as i32, id, self.me() as i32) }
            .map_err(|e| format!("ncclCommInitRank: {e:?}"))?;
        let mut v = 0i32;
        // SAFETY: writes one int.
        let _ = unsafe { cudarc::nccl::sys::ncclGetVersion(&mut v) };
        self.info.push((
            "NCCL".into(),
            format!("{}.{}.{} ({np} rank(s))", v / 10000, v / 100 % 100, v % 100),
        ));
        Ok(Some(comm))
    }
}

/// NCCL in-place f32 sum of `buf[..n]` on this PE's stream.
fn nccl_all_reduce(
    comm: cudarc::nccl::sys::ncclComm_t,
    buf: &SymBuffer<f32>,
    n: usize,
    nv: &Nvshmem,
) -> Res<()> {
    let p = buf.device_ptr().addr() as *mut std::ffi::c_void;
    // SAFETY: `buf` holds n floats of device memory; the stream is this PE's.
    unsafe {
        cudarc::nccl::result::all_reduce(
            p,
            p,
            n,
            cudarc::nccl::sys::ncclDataType_t::ncclFloat32,
            cudarc::nccl::sys::ncclRedOp_t::ncclSum,
            comm,
            nv.stream().cu_stream() as cudarc::nccl::sys::cudaStream_t,
        )
    }
    .map_err(|e| format!("ncclAllReduce: {e:?}"))?;
    Ok(())
}
