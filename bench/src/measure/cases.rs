//! The point-to-point cases (PE 0 aimed at PE 1, or itself with one PE): the
//! hardware ceilings, latencies, atomics, ping-pong, the barrier, and bandwidth.

use super::*;

impl Bench<'_> {
    pub(super) fn ceilings(&mut self) -> Res<()> {
        if !self.wanted("copy") || self.opts.check {
            return Ok(());
        }
        let stream = self.nv.stream().clone();
        let bytes = self.pool / 2;
        let seed = self.next_seed();
        self.fill(self.src.device_ptr(), self.pool, seed)?;
        self.poison(self.dst.device_ptr(), self.pool, seed)?;
        self.barrier()?;
        let copy = |dst: u64, src: u64| -> Res<()> {
            // SAFETY: both ranges hold `bytes` bytes of device memory.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    dst,
                    src,
                    bytes as usize,
                    stream.cu_stream(),
                )
            }?;
            Ok(())
        };
        let (s0, s1) = (
            self.src.device_ptr().addr(),
            self.src.device_ptr().addr() + bytes,
        );
        let (d0, d1) = (
            self.dst.device_ptr().addr(),
            self.dst.device_ptr().addr() + bytes,
        );
        let mut flip = false;
        let t = if self.lead() {
            self.time(|| {
                flip = !flip;
                if flip { copy(d0, s0) } else { copy(d1, s1) }
            })?
        } else {
            0.0
        };
        // The timed copies alternate halves: what they wrote holds the
        // source's bytes, on the device, where the poison was.
        let copied = if self.opts.warmup + self.opts.reps >= 2 {
            self.pool
        } else {
            bytes
        };
        let wrong = self.checked_on(0, self.dst.device_ptr(), copied, seed)?;
        let (wrong, t) = self.agree(wrong, t)?;
        let gbs = bytes as f64 / t / 1e9;
        self.record(
            "copy_ceiling",
            "read+write",
            bytes,
            "ceiling",
            t,
            2.0 * gbs,
            "GB/s",
            wrong,
        );
        self.record(
            "copy_ceiling",
            "one-way",
            bytes,
            "ceiling",
            t,
            gbs,
            "GB/s",
            wrong,
        );
        if self.nv.n_pes() > 1 {
            let tgt = self.target();
            let peer = self.dst.peer_ptr(Pe::new(tgt))?;
            if let Some(p) = peer {
                if self.me() == tgt {
                    self.poison(self.dst.device_ptr(), bytes, seed)?;
                }
                self.barrier()?;
                let t = if self.lead() {
                    self.time(|| copy(p.addr(), s0))?
                } else {
                    0.0
                };
                self.barrier()?;
                let wrong = self.checked_on(tgt, self.dst.device_ptr(), bytes, seed)?;
                let (wrong, t) = self.agree(wrong, t)?;
                let v = bytes as f64 / t / 1e9;
                self.record(
                    "copy_ceiling",
                    "to-peer",
                    bytes,
                    "ceiling",
                    t,
                    v,
                    "GB/s",
                    wrong,
                );
            }
        }
        self.barrier()
    }

    pub(super) fn latency(&mut self) -> Res<()> {
        let iters: u64 = if self.opts.check { 10 } else { 2000 };
        let tgt = self.target();
        let stream = self.nv.stream().clone();
        for ii in 0..self.impls.len() {
            let name = self.impls[ii].name.clone();
            if self.wanted("p_lat") {
                let k = self.impls[ii].kernel("lat_p")?;
                self.words.fill(&stream, 0)?;
                self.barrier()?;
                self.lead_launch(&k, 1, 1, (self.words.sym_ptr(), tgt, iters))?;
                self.barrier()?;
                let wrong = if self.me() == tgt {
                    (self.words.at(0)?.to_vec(&stream)?[0] != iters) as u64
                } else {
                    0
                };
                let t = self.lead_time(&k, 1, 1, (self.words.sym_ptr(), tgt, iters))?;
                let (wrong, t) = self.agree(wrong, t / iters as f64)?;
                self.record("p_lat", "p+quiet", 8, &name, t, t * 1e6, "us", wrong);
            }
            if self.wanted("g_lat") {
                let k = self.impls[ii].kernel("lat_g")?;
                // A pointer chase over 8 words: word j holds next index + 8 * (j + 1).
                let chase: Vec<u64> = (0..8u64).map(|j| ((j * 5 + 3) & 7) + 8 * (j + 1)).collect();
                self.words.view(..8)?.copy_from_host(&stream, &chase)?;
                let args = self.word_args(iters)?;
                self.lead_launch(&k, 1, 1, args)?;
                self.barrier()?;
                let mut wrong = 0;
                if self.lead() {
                    let (mut acc, mut idx) = (0u64, 0usize);
                    for _ in 0..iters {
                        acc += chase[idx];
                        idx = (chase[idx] & 7) as usize;
                    }
                    wrong = (self.out.at(0)?.to_vec(&stream)?[0] != acc) as u64;
                }
                let t = self.lead_time(&k, 1, 1, args)?;
                let (wrong, t) = self.agree(wrong, t / iters as f64)?;
                self.record("g_lat", "g", 8, &name, t, t * 1e6, "us", wrong);
            }
            for (case, dir) in [("put_lat", Dir::Put), ("get_lat", Dir::Get)] {
                if !self.wanted(case) {
                    continue;
                }
                let bytes = 8u64;
                let seed = self.next_seed();
                let checker = self.prepare_transfer(dir, bytes, seed)?;
                let t = match dir {
                    Dir::Put => {
                        let k = self.impls[ii].kernel("lat_put")?;
                        let a = (self.dst.sym_ptr(), self.src.device_ptr(), bytes, tgt, iters);
                        self.check_then_time(&k, (1, 1), a, a, (checker, bytes, seed))?
                    }
                    Dir::Get => {
                        let k = self.impls[ii].kernel("lat_get")?;
                        let a = (self.dst.device_ptr(), self.src.sym_ptr(), bytes, tgt, iters);
                        self.check_then_time(&k, (1, 1), a, a, (checker, bytes, seed))?
                    }
                };
                let (wrong, t) = self.agree(t.1, t.0 / iters as f64)?;
                let variant = if dir == Dir::Put { "put+quiet" } else { "get" };
                self.record(case, variant, bytes, &name, t, t * 1e6, "us", wrong);
            }
        }
        self.barrier()
    }

    /// Before a `dir` transfer of `region` bytes between PE 0 and its
    /// target: fills the source on the PE that owns it with round `seed`,
    /// poisons the destination on the PE that checks it (every byte the
    /// complement of what must arrive), and passes a barrier. Returns the
    /// checking PE.
    fn prepare_transfer(&self, dir: Dir, region: u64, seed: u32) -> Res<u32> {
        let tgt = self.target();
        let (owner, checker) = match dir {
            Dir::Put => (0, tgt),
            Dir::Get => (tgt, 0),
        };
        if self.me() == owner {
            self.fill(self.src.device_ptr(), region, seed)?;
        }
        if self.me() == checker {
            self.poison(self.dst.device_ptr(), region, seed)?;
        }
        self.barrier()?;
        Ok(checker)
    }

    /// Launches `k` once on PE 0 with `checked`, checks the destination
    /// (`(checker, region, seed)`, see [`prepare_transfer`](Self::prepare_transfer)),
    /// then times it with `timed`: `(time, wrong bytes)`. Collective.
    fn check_then_time<A: KernelArgs + Copy>(
        &self,
        k: &Kernel,
        (grid, block): (u32, u32),
        checked: A,
        timed: A,
        (checker, region, seed): (u32, u64, u32),
    ) -> Res<(f64, u64)> {
        self.lead_launch(k, grid, block, checked)?;
        self.barrier()?;
        let wrong = self.checked_on(checker, self.dst.device_ptr(), region, seed)?;
        Ok((self.lead_time(k, grid, block, timed)?, wrong))
    }

    /// Zeroes `out`, passes a barrier, and gives the arguments of a
    /// one-word latency kernel: `(words, target, iters, out)`.
    fn word_args(&self, iters: u64) -> Res<(SymPtr<u64>, u32, u64, DevicePtr<u64>)> {
        self.out.fill(self.nv.stream(), 0)?;
        self.barrier()?;
        Ok((
            self.words.sym_ptr(),
            self.target(),
            iters,
            self.out.device_ptr(),
        ))
    }

    /// `check_bytes` on PE `pe` only; 0 elsewhere.
    pub(super) fn checked_on(
        &self,
        pe: u32,
        buf: DevicePtr<u8>,
        bytes: u64,
        seed: u32,
    ) -> Res<u64> {
        if self.me() == pe {
            self.check_bytes(buf, bytes, seed)
        } else {
            Ok(0)
        }
    }

    pub(super) fn amo(&mut self) -> Res<()> {
        let tgt = self.target();
        let stream = self.nv.stream().clone();
        let ops = ["fetch_add", "add", "compare_swap", "swap"];
        for ii in 0..self.impls.len() {
            let name = self.impls[ii].name.clone();
            for op in ops {
                // Latency: one thread.
                if self.wanted("amo_lat") {
                    let iters: u64 = if self.opts.check { 10 } else { 2000 };
                    let k = self.impls[ii].kernel(&format!("lat_amo_{op}"))?;
                    self.words.fill(&stream, 0)?;
                    let args = self.word_args(iters)?;
                    self.lead_launch(&k, 1, 1, args)?;
                    self.barrier()?;
                    let mut wrong = 0;
                    if self.me() == tgt {
                        wrong += (self.words.at(0)?.to_vec(&stream)?[0] != iters) as u64;
                    }
                    if self.lead() {
                        let want = if op == "fetch_add" {
                            iters * (iters - 1) / 2
                        } else {
                            iters
                        };
                        wrong += (self.out.at(0)?.to_vec(&stream)?[0] != want) as u64;
                    }
                    let t = self.lead_time(&k, 1, 1, args)?;
                    let (wrong, t) = self.agree(wrong, t / iters as f64)?;
                    self.record("amo_lat", op, 8, &name, t, t * 1e6, "us", wrong);
                }
                // Throughput: every thread its own word.
                if self.wanted("amo_tput") {
                    let iters: u64 = if self.opts.check { 4 } else { 64 };
                    let k = self.impls[ii].kernel(&format!("tput_amo_{op}"))?;
                    let (grid, block) = (self.sms * TPUT_BLOCKS_PER_SM, TPUT_THREADS);
                    let n = (grid * block) as usize;
                    self.words.fill(&stream, 0)?;
                    self.out.fill(&stream, 0)?;
                    self.barrier()?;
                    let args = (self.words.sym_ptr(), tgt, iters, self.out.device_ptr());
                    self.lead_launch(&k, grid, block, args)?;
                    self.barrier()?;
                    let mut wrong = 0;
                    if self.me() == tgt {
                        let w = self.words.view(..n)?.to_vec(&stream)?;
                        wrong += w.iter().filter(|&&v| v != iters).count() as u64;
                    }
                    if self.lead() {
                        let want = if op == "fetch_add" {
                            iters * (iters - 1) / 2
                        } else {
                            iters
                        };
                        let o = self.out.view(..n)?.to_vec(&stream)?;
                        wrong += o.iter().filter(|&&v| v != want).count() as u64;
                    }
                    let t = self.lead_time(&k, grid, block, args)?;
                    let (wrong, t) = self.agree(wrong, t)?;
                    let ops_total = n as f64 * iters as f64;
                    let rate = ops_total / t / 1e9;
                    self.record(
                        "amo_tput",
                        op,
                        8,
                        &name,
                        t / iters as f64,
                        rate,
                        "Gop/s",
                        wrong,
                    );
                }
            }
        }
        self.barrier()
    }

    pub(super) fn pingpong(&mut self) -> Res<()> {
        if !self.wanted("pingpong") {
            return Ok(());
        }
        let iters: u64 = if self.opts.check { 10 } else { 1000 };
        let tgt = self.target();
        let stream = self.nv.stream().clone();
        let me = self.me();
        let active = me == 0 || me == tgt;
        let (peer, first) = if me == 0 { (tgt, 1u32) } else { (0, 0) };
        for ii in 0..self.impls.len() {
            let name = self.impls[ii].name.clone();
            let k = self.impls[ii].kernel("pingpong")?;
            let launch = |base: u64| -> Res<()> {
                if active {
                    let args = (
                        self.ppdata.sym_ptr(),
                        self.sig.sym_ptr(),
                        self.ppsrc.device_ptr(),
                        1u64,
                        peer,
                        first,
                        iters,
                        base,
                    );
                    // SAFETY: one u64 of data, one signal word, both PEs with the same base.
                    unsafe { k.launch(&stream, 1, 1, args)? };
                }
                Ok(())
            };
            self.ppdata.fill(&stream, 0)?;
            self.barrier()?;
            let base = self.sig_base.get();
            launch(base)?;
            self.sig_base.set(base + iters);
            self.barrier()?;
            let mut wrong = 0;
            if active {
                let from = if me == 0 { tgt } else { 0 };
                wrong += (self.ppdata.to_vec(&stream)?[0] != 0xabc0 + from as u64) as u64;
                wrong += (self.sig.to_vec(&stream)?[0] != base + iters) as u64;
            }
            let mut t = 0.0;
            if !self.opts.check {
                let mut times = Vec::new();
                let ctx = self.nv.context().clone();
                for r in 0..self.opts.warmup + self.opts.reps {
                    self.nv.barrier_all_on_stream(&stream)?;
                    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
                    let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
                    start.record(&stream)?;
                    let base = self.sig_base.get();
                    launch(base)?;
                    self.sig_base.set(base + iters);
                    end.record(&stream)?;
                    if r >= self.opts.warmup {
                        times.push((start, end));
                    }
                }
                self.nv.synchronize(&stream)?;
                let mut v = times
                    .iter()
                    .map(|(s, e)| Ok(s.elapsed_ms(e)? as f64 * 1e-3))
                    .collect::<Res<Vec<f64>>>()?;
                t = if active { median(&mut v) } else { 0.0 };
            }
            let (wrong, t) = self.agree(wrong, t / iters as f64 / 2.0)?;
            self.record("pingpong", "put_signal", 8, &name, t, t * 1e6, "us", wrong);
        }
        self.barrier()
    }

    pub(super) fn barrier_case(&mut self) -> Res<()> {
        if !self.wanted("barrier") {
            return Ok(());
        }
        let iters: u64 = if self.opts.check { 10 } else { 1000 };
        let stream = self.nv.stream().clone();
        for ii in 0..self.impls.len() {
            let name = self.impls[ii].name.clone();
            let k = self.impls[ii].kernel("barrier_lat")?;
            let launch = || -> Res<()> {
                // SAFETY: no memory; every PE launches it with the same iters.
                unsafe { k.launch_collective(&stream, 1, 32, (iters,))? };
                Ok(())
            };
            self.barrier()?;
            launch()?;
            self.barrier()?;
            let t = if self.opts.check {
                0.0
            } else {
                self.time(launch)?
            };
            // Nothing a barrier leaves behind is checked: the row says so.
            let (_, t) = self.agree(0, t / iters as f64)?;
            self.record_unchecked("barrier_lat", "barrier_all", 0, &name, t, t * 1e6, "us");
        }
        self.barrier()
    }

    pub(super) fn bandwidth(&mut self) -> Res<()> {
        let max = self.pool.min(64 << 20);
        let list = if self.opts.check {
            vec![8, 4096, 1 << 20, 2 << 20]
        } else if self.opts.quick {
            sizes(8, max, 16)
        } else {
            sizes(8, max, 4)
        };
        let tgt = self.target();
        let scopes = [(0u32, "thread"), (1, "warp"), (2, "block")];
        for (dir, case) in [(Dir::Put, "put_bw"), (Dir::Get, "get_bw")] {
            if !self.wanted(case) {
                continue;
            }
            let kinds: &[&str] = if dir == Dir::Put {
                &["", "_nbi", "_p2p"]
            } else {
                &["", "_nbi"]
            };
            for &kind in kinds {
                for (scope, sname) in scopes {
                    let variant = format!("{sname}{kind}");
                    let kname = format!(
                        "bw_{}{kind}_{sname}",
                        if dir == Dir::Put { "put" } else { "get" },
                    );
                    for &bytes in &list {
                        let nbuf = if bytes >= ROTATE_MIN {
                            (self.pool / bytes).max(1)
                        } else {
                            1
                        };
                        let iters = if self.opts.check {
                            nbuf
                        } else {
                            ((512u64 << 20) / bytes).clamp(nbuf.max(4), 1000)
                        };
                        let (grid, block) = bw_shape(scope, bytes, self.sms);
                        for ii in 0..self.impls.len() {
                            let name = self.impls[ii].name.clone();
                            let k = self.impls[ii].kernel(&kname)?;
                            let region = nbuf * bytes;
                            let seed = self.next_seed();
                            let checker = self.prepare_transfer(dir, region, seed)?;
                            let check = (checker, region, seed);
                            let (src, dst) = (self.src.device_ptr(), self.dst.device_ptr());
                            let (s, d) = (self.src.sym_ptr(), self.dst.sym_ptr());
                            let shape = (grid, block);
                            let t = match dir {
                                Dir::Put => {
                                    let a = |it| (d, src, bytes, tgt, it, nbuf);
                                    self.check_then_time(&k, shape, a(nbuf), a(iters), check)?
                                }
                                Dir::Get => {
                                    let a = |it| (dst, s, bytes, tgt, it, nbuf);
                                    self.check_then_time(&k, shape, a(nbuf), a(iters), check)?
                                }
                            };
                            let (wrong, t) = self.agree(t.1, t.0 / iters as f64)?;
                            let gbs = bytes as f64 / t / 1e9;
                            self.record(case, &variant, bytes, &name, t, gbs, "GB/s", wrong);
                        }
                    }
                }
            }
        }
        self.barrier()
    }
}
