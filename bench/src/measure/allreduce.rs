//! The all-reduce cases: the example's kernels against NCCL, on every PE.

use super::*;

impl Bench<'_> {
    pub(super) fn ar_grid(&self, oneshot: bool, n: usize) -> u32 {
        let per_block = if oneshot {
            AR_THREADS as usize * 8
        } else {
            AR_TILE * self.nv.n_pes() as usize
        };
        n.div_ceil(per_block).clamp(1, self.ar_max_grid as usize) as u32
    }

    /// One in-kernel all-reduce of `ar_data[..n]` with implementation `imp`.
    pub(super) fn ar_call(&self, k: &Kernel, oneshot: bool, n: usize) -> Res<()> {
        let grid = self.ar_grid(oneshot, n);
        let epoch = self.epoch.get() + 1;
        self.epoch.set(epoch);
        let (data, scratch) = (self.ar_data.sym_ptr(), self.ar_scratch.sym_ptr());
        let (ready, done) = (self.ar_ready.sym_ptr(), self.ar_done.sym_ptr());
        let stream = self.nv.stream();
        // SAFETY: the buffers hold n floats, the stage half, scratch tiles and
        // grid * n_pes signal words (see Bench::new); all blocks co-resident.
        unsafe {
            if oneshot {
                let off = (epoch % 2) as usize * self.ar_stage_half;
                let stage = self.ar_stage.view(off..off + n)?.sym_ptr();
                k.launch_collective(
                    stream,
                    grid,
                    AR_THREADS,
                    (data, stage, scratch, ready, n as u64, epoch),
                )?;
            } else {
                k.launch_collective(
                    stream,
                    grid,
                    AR_THREADS,
                    (data, scratch, ready, done, n as u64, epoch),
                )?;
            }
        }
        Ok(())
    }

    pub(super) fn ar_fill(&self, n: usize) -> Res<u32> {
        let seed = self.next_seed();
        let k = self.ar_util.kernel("fill_pattern")?;
        // SAFETY: writes n floats of ar_data.
        unsafe {
            k.launch(
                self.nv.stream(),
                self.grid_for(n as u64),
                512,
                (self.ar_data.device_ptr(), n as u64, self.me(), seed),
            )?
        };
        Ok(seed)
    }

    pub(super) fn ar_check(&self, n: usize, seed: u32) -> Res<u64> {
        let stream = self.nv.stream();
        self.errors.fill(stream, 0)?;
        let k = self.ar_util.kernel("check_pattern")?;
        let errors: DevicePtr<u32> = self.errors.at(0)?.device_ptr();
        let args = (
            self.ar_data.device_ptr(),
            n as u64,
            self.nv.n_pes(),
            seed,
            errors,
        );
        // SAFETY: reads n floats; adds to one u32.
        unsafe { k.launch(stream, self.grid_for(n as u64), 512, args)? };
        let mut wrong = self.errors.to_vec(stream)?[0] as u64;
        // And a host spot check of the first elements.
        let m = n.min(4096);
        let got = self.ar_data.view(..m)?.to_vec(stream)?;
        for (i, &g) in got.iter().enumerate() {
            let want: u32 = (0..self.nv.n_pes())
                .map(|pe| ar_pattern(pe, i as u64, seed))
                .sum();
            wrong += (g != want as f32) as u64;
        }
        Ok(wrong)
    }

    pub(super) fn allreduce(&mut self) -> Res<()> {
        if !self.wanted("allreduce") {
            return Ok(());
        }
        let np = self.nv.n_pes();
        let threshold = (2u64 << 20) / np.max(2) as u64;
        let nccl = if self.opts.nccl {
            self.nccl_comm()?
        } else {
            None
        };
        if self.lead() {
            println!(
                "  all-reduce: grid up to {} x {AR_THREADS}, one-shot up to {}, peers {}",
                self.ar_max_grid,
                human(threshold),
                if self.all_direct {
                    "direct"
                } else {
                    "partly by get/put"
                }
            );
        }
        for &bytes in &self.ar_sizes.clone() {
            let n = (bytes / 4) as usize;
            let oneshot = bytes <= threshold;
            let algo = if oneshot { "one-shot" } else { "rs+ag" };
            for ii in 0..self.impls.len() {
                let name = self.impls[ii].name.clone();
                let k = self.impls[ii].kernel(if oneshot {
                    "allreduce_oneshot"
                } else {
                    "allreduce_rs_ag"
                })?;
                self.barrier()?;
                let mut wrong = 0;
                for _ in 0..3 {
                    let seed = self.ar_fill(n)?;
                    self.ar_call(&k, oneshot, n)?;
                    wrong += self.ar_check(n, seed)?;
                }
                self.barrier()?;
                let t = if self.opts.check {
                    0.0
                } else {
                    self.time(|| self.ar_call(&k, oneshot, n))?
                };
                let (wrong, t) = self.agree(wrong, t)?;
                self.record(
                    "allreduce",
                    algo,
                    bytes,
                    &name,
                    t,
                    bytes as f64 / t / 1e9,
                    "GB/s",
                    wrong,
                );
            }
            if let Some(comm) = nccl {
                self.barrier()?;
                let mut wrong = 0;
                for _ in 0..3 {
                    let seed = self.ar_fill(n)?;
                    nccl_all_reduce(comm, &self.ar_data, n, self.nv)?;
                    wrong += self.ar_check(n, seed)?;
                }
                self.barrier()?;
                let t = if self.opts.check {
                    0.0
                } else {
                    self.time(|| nccl_all_reduce(comm, &self.ar_data, n, self.nv))?
                };
                let (wrong, t) = self.agree(wrong, t)?;
                self.record(
                    "allreduce",
                    "nccl",
                    bytes,
                    "nccl",
                    t,
                    bytes as f64 / t / 1e9,
                    "GB/s",
                    wrong,
                );
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
        if np > 1 && !self.distinct_gpus {
            self.info.push((
                "NCCL".into(),
                format!(
                    "not measured with {np} PEs: {} PEs share a GPU, which NCCL refuses (needs one GPU per PE)",
                    self.pes_per_gpu
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
