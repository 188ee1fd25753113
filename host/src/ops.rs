//! NVSHMEM operations issued from the host: stream-ordered (`*_on_stream`, the
//! usual way, ordered with kernels on the same stream) and host-blocking.

use crate::error::{Error, Result};
use crate::library::HostLibrary;
use crate::memory::{AsSymView, SymView};
use crate::nvshmem::Nvshmem;
use crate::team::{AsTeam, Team};
use bytemuck::Pod;
use cudarc::driver::CudaStream;
use nvshmem_types::{Cmp, Pe, ReduceOp, SignalOp};

/// Checks a stream operation's arguments and makes the context current.
fn enter_on(nv: &Nvshmem, stream: &CudaStream, what: &'static str) -> Result<()> {
    nv.inner.enter(what)?;
    nv.inner.check_stream(stream)
}

/// Checks that `view` belongs to this `Nvshmem` (not a finalized earlier one).
fn own<'a, T: Pod>(
    nv: &Nvshmem,
    view: SymView<'a, T>,
    what: &'static str,
) -> Result<SymView<'a, T>> {
    if std::rc::Rc::ptr_eq(view.inner(), &nv.inner) {
        Ok(view)
    } else {
        Err(Error::Finalized { what })
    }
}

fn same_len<T: Pod>(what: &str, dst: &SymView<'_, T>, src: &SymView<'_, T>) -> Result<()> {
    if dst.len() == src.len() {
        Ok(())
    } else {
        Err(Error::bad_size(format!(
            "{what}: destination has {} elements, source {}",
            dst.len(),
            src.len()
        )))
    }
}

fn signal_word<'a>(
    nv: &Nvshmem,
    signal: &'a impl AsSymView<u64>,
    what: &'static str,
) -> Result<SymView<'a, u64>> {
    let sig = own(nv, signal.as_sym_view(), what)?;
    if sig.len() != 1 {
        return Err(Error::bad_size(format!(
            "{what}: a signal is one u64, but {} were given; pick one with SymBuffer::at",
            sig.len()
        )));
    }
    Ok(sig)
}

/// Generates the stream-ordered collectives that take only a stream.
macro_rules! collective_on_stream {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self, stream: &CudaStream) -> Result<()> {
            enter_on(self, stream, stringify!($name))?;
            // SAFETY: initialized; a stream of this context. The collective
            // rule (every PE calls it) is NVSHMEM's, as documented.
            unsafe { self.inner.lib.$ffi(stream.cu_stream()) };
            Ok(())
        }
    )*};
}

/// Generates the put and get variants: (dest, source) in the C argument order.
macro_rules! rma_on_stream {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name<T: Pod>(
            &self,
            stream: &CudaStream,
            dst: &impl AsSymView<T>,
            src: &impl AsSymView<T>,
            pe: Pe,
        ) -> Result<()> {
            enter_on(self, stream, stringify!($name))?;
            self.inner.check_pe(pe)?;
            let (dst, src) = (own(self, dst.as_sym_view(), stringify!($name))?, own(self, src.as_sym_view(), stringify!($name))?);
            same_len(stringify!($name), &dst, &src)?;
            // SAFETY: both are symmetric ranges of equal length in this PE's
            // heap; `pe` is valid.
            unsafe {
                self.inner.lib.$ffi(dst.raw().cast(), src.raw().cast(), dst.size_bytes(), pe.to_c(), stream.cu_stream())
            };
            Ok(())
        }
    )*};
}

impl Nvshmem {
    collective_on_stream! {
        /// `nvshmemx_barrier_all_on_stream`: when the stream reaches it, waits
        /// until every PE's stream has, with all their earlier puts complete.
        /// **Collective.**
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// nv.barrier_all_on_stream(nv.stream())?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        barrier_all_on_stream => nvshmemx_barrier_all_on_stream;
        /// `nvshmemx_sync_all_on_stream`: like the barrier, without completing
        /// puts first. **Collective.**
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// nv.sync_all_on_stream(nv.stream())?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        sync_all_on_stream => nvshmemx_sync_all_on_stream;
        /// `nvshmemx_quiet_on_stream`: completes this PE's earlier puts,
        /// gets and atomics, in stream order.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// nv.quiet_on_stream(nv.stream())?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        quiet_on_stream => nvshmemx_quiet_on_stream;
    }

    rma_on_stream! {
        /// `nvshmemx_putmem_on_stream`: copies this PE's `src` into `pe`'s `dst`
        /// (same length), in stream order; complete when the stream passes it.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// let (src, dst) = (nv.alloc_from(&[1u32; 64])?, nv.alloc_zeroed::<u32>(64)?);
        /// let next = nv.my_pe().ring_next(nv.n_pes());
        /// nv.put_on_stream(nv.stream(), &dst, &src, next)?;
        /// nv.barrier_all_on_stream(nv.stream())?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        put_on_stream => nvshmemx_putmem_on_stream;
        /// `nvshmemx_getmem_on_stream`: copies `pe`'s `src` into this PE's `dst`.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let (src, dst) = (nv.alloc_from(&[1u32; 64])?, nv.alloc_zeroed::<u32>(64)?);
        /// nv.get_on_stream(nv.stream(), &dst, &src, nvshmem_host::Pe::new(0))?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        get_on_stream => nvshmemx_getmem_on_stream;
        /// `nvshmemx_putmem_nbi_on_stream`: a put that completes at the next
        /// quiet or barrier rather than in stream order.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let (src, dst) = (nv.alloc_from(&[1u32; 64])?, nv.alloc_zeroed::<u32>(64)?);
        /// nv.put_nbi_on_stream(nv.stream(), &dst, &src, nv.my_pe())?;
        /// nv.quiet_on_stream(nv.stream())?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        put_nbi_on_stream => nvshmemx_putmem_nbi_on_stream;
        /// `nvshmemx_getmem_nbi_on_stream`: a get that completes at the next quiet.
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// # let (src, dst) = (nv.alloc_from(&[1u32; 64])?, nv.alloc_zeroed::<u32>(64)?);
        /// nv.get_nbi_on_stream(nv.stream(), &dst, &src, nv.my_pe())?;
        /// nv.quiet_on_stream(nv.stream())?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        get_nbi_on_stream => nvshmemx_getmem_nbi_on_stream;
    }

    /// `nvshmemx_putmem_signal_on_stream`: puts `src` into `pe`'s `dst`, then
    /// updates `pe`'s `signal` word (one `u64`, see [`SymBuffer::at`](crate::SymBuffer::at))
    /// with `op` and `value`, so that the receiver can wait on the signal.
    ///
    /// ```no_run
    /// use nvshmem_host::{Cmp, SignalOp};
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// # let (src, dst) = (nv.alloc_from(&[1u32; 64])?, nv.alloc_zeroed::<u32>(64)?);
    /// let signal = nv.alloc_zeroed::<u64>(1)?;
    /// let next = nv.my_pe().ring_next(nv.n_pes());
    /// nv.put_signal_on_stream(nv.stream(), &dst, &src, &signal, 1, SignalOp::Set, next)?;
    /// nv.signal_wait_until_on_stream(nv.stream(), &signal, Cmp::Eq, 1)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
        signal: &impl AsSymView<u64>,
        value: u64,
        op: SignalOp,
        pe: Pe,
    ) -> Result<()> {
        self.put_signal(
            stream,
            dst.as_sym_view(),
            src.as_sym_view(),
            signal,
            value,
            op,
            pe,
            false,
        )
    }

    /// `nvshmemx_putmem_signal_nbi_on_stream`: [`Nvshmem::put_signal_on_stream`]
    /// that completes at the next quiet or barrier rather than in stream order
    /// (the signal still arrives after the data).
    ///
    /// ```no_run
    /// use nvshmem_host::SignalOp;
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// # let (src, dst) = (nv.alloc_from(&[1u32; 64])?, nv.alloc_zeroed::<u32>(64)?);
    /// # let signal = nv.alloc_zeroed::<u64>(1)?;
    /// nv.put_signal_nbi_on_stream(nv.stream(), &dst, &src, &signal, 1, SignalOp::Add, nv.my_pe())?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal_nbi_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
        signal: &impl AsSymView<u64>,
        value: u64,
        op: SignalOp,
        pe: Pe,
    ) -> Result<()> {
        self.put_signal(
            stream,
            dst.as_sym_view(),
            src.as_sym_view(),
            signal,
            value,
            op,
            pe,
            true,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn put_signal<T: Pod>(
        &self,
        stream: &CudaStream,
        dst: SymView<'_, T>,
        src: SymView<'_, T>,
        signal: &impl AsSymView<u64>,
        value: u64,
        op: SignalOp,
        pe: Pe,
        nbi: bool,
    ) -> Result<()> {
        const WHAT: &str = "put_signal_on_stream";
        enter_on(self, stream, WHAT)?;
        self.inner.check_pe(pe)?;
        let (dst, src) = (own(self, dst, WHAT)?, own(self, src, WHAT)?);
        same_len(WHAT, &dst, &src)?;
        let sig = signal_word(self, signal, WHAT)?;
        let lib = self.inner.lib;
        let put = if nbi {
            HostLibrary::nvshmemx_putmem_signal_nbi_on_stream
        } else {
            HostLibrary::nvshmemx_putmem_signal_on_stream
        };
        // SAFETY: symmetric ranges of equal length, a symmetric u64, a valid PE.
        unsafe {
            put(
                lib,
                dst.raw().cast(),
                src.raw().cast(),
                dst.size_bytes(),
                sig.raw(),
                value,
                op.to_c(),
                pe.to_c(),
                stream.cu_stream(),
            )
        };
        Ok(())
    }

    /// `nvshmemx_signal_op_on_stream`: updates `pe`'s `signal` word with `op`
    /// and `value`, in stream order.
    ///
    /// ```no_run
    /// # use nvshmem_host::SignalOp;
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let signal = nv.alloc_zeroed::<u64>(1)?;
    /// nv.signal_op_on_stream(nv.stream(), &signal, 1, SignalOp::Add, nv.my_pe())?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn signal_op_on_stream(
        &self,
        stream: &CudaStream,
        signal: &impl AsSymView<u64>,
        value: u64,
        op: SignalOp,
        pe: Pe,
    ) -> Result<()> {
        const WHAT: &str = "signal_op_on_stream";
        enter_on(self, stream, WHAT)?;
        self.inner.check_pe(pe)?;
        let sig = signal_word(self, signal, WHAT)?;
        // SAFETY: a symmetric u64 and a valid PE.
        unsafe {
            self.inner.lib.nvshmemx_signal_op_on_stream(
                sig.raw(),
                value,
                op.to_c(),
                pe.to_c(),
                stream.cu_stream(),
            )
        };
        Ok(())
    }

    /// `nvshmemx_signal_wait_until_on_stream`: the stream waits until this
    /// PE's `signal` word compares true with `value`.
    ///
    /// Refused with [`Error::Unsupported`] in limited MPG ([`Nvshmem::limited_mpg`]:
    /// several PEs on one GPU without MPS), where NVSHMEM would end the process.
    ///
    /// ```no_run
    /// # use nvshmem_host::Cmp;
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// # let signal = nv.alloc_zeroed::<u64>(1)?;
    /// nv.signal_wait_until_on_stream(nv.stream(), &signal, Cmp::Ge, 1)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn signal_wait_until_on_stream(
        &self,
        stream: &CudaStream,
        signal: &impl AsSymView<u64>,
        cmp: Cmp,
        value: u64,
    ) -> Result<()> {
        const WHAT: &str = "signal_wait_until_on_stream";
        enter_on(self, stream, WHAT)?;
        let sig = signal_word(self, signal, WHAT)?;
        self.inner.check_full_mpg(WHAT)?;
        // SAFETY: a symmetric u64 of this PE.
        unsafe {
            self.inner.lib.nvshmemx_signal_wait_until_on_stream(
                sig.raw(),
                cmp.to_c(),
                value,
                stream.cu_stream(),
            )
        };
        Ok(())
    }

    /// `nvshmemx_broadcastmem_on_stream` over every PE: `root`'s `src` lands in
    /// every PE's `dst` (same length). **Collective.** See
    /// [`Nvshmem::team_broadcast_on_stream`] for other teams.
    ///
    /// Refused with [`Error::Unsupported`] in limited MPG ([`Nvshmem::limited_mpg`]:
    /// several PEs on one GPU without MPS), where NVSHMEM would end the process.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// # let (src, dst) = (nv.alloc_from(&[1u32; 64])?, nv.alloc_zeroed::<u32>(64)?);
    /// nv.broadcast_on_stream(nv.stream(), &dst, &src, nvshmem_host::Pe::new(0))?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn broadcast_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
        root: Pe,
    ) -> Result<()> {
        self.team_broadcast_on_stream(stream, Team::World, dst, src, root)
    }

    /// `nvshmemx_broadcastmem_on_stream` over `team`: the team's PE `root`'s
    /// `src` lands in `dst` on every PE of the team (same length).
    /// **Collective over the team.** Refused in limited MPG, as
    /// [`Nvshmem::broadcast_on_stream`].
    ///
    /// ```no_run
    /// use nvshmem_host::{Pe, Team};
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// # let (src, dst) = (nv.alloc_from(&[1u32; 7])?, nv.alloc_zeroed::<u32>(7)?);
    /// nv.team_broadcast_on_stream(nv.stream(), Team::Node, &dst, &src, Pe::new(0))?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn team_broadcast_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        team: impl AsTeam,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
        root: Pe,
    ) -> Result<()> {
        const WHAT: &str = "broadcast_on_stream";
        let (t, n) = self.enter_team(stream, &team, WHAT)?;
        if root.index() >= n {
            return Err(Error::InvalidPe {
                pe: root.index(),
                n_pes: n,
            });
        }
        let (dst, src) = (
            own(self, dst.as_sym_view(), WHAT)?,
            own(self, src.as_sym_view(), WHAT)?,
        );
        same_len(WHAT, &dst, &src)?;
        // SAFETY: symmetric ranges of equal length; a valid root of a live team.
        let status = unsafe {
            self.inner.lib.nvshmemx_broadcastmem_on_stream(
                t,
                dst.raw().cast(),
                src.raw().cast(),
                dst.size_bytes(),
                root.to_c(),
                stream.cu_stream(),
            )
        };
        check_status("nvshmemx_broadcastmem_on_stream", status)
    }

    /// `nvshmemx_fcollectmem_on_stream` over every PE: each PE's `src` lands
    /// at offset `pe * src.len()` of every PE's `dst` (`n_pes * src.len()`
    /// elements). **Collective.** See [`Nvshmem::team_fcollect_on_stream`].
    ///
    /// Refused with [`Error::Unsupported`] in limited MPG ([`Nvshmem::limited_mpg`]:
    /// several PEs on one GPU without MPS), where NVSHMEM would end the process.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let mine = nv.alloc_from(&[nv.my_pe().index(); 4])?;
    /// let all = nv.alloc_zeroed::<u32>(4 * nv.n_pes() as usize)?;
    /// nv.fcollect_on_stream(nv.stream(), &all, &mine)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn fcollect_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
    ) -> Result<()> {
        self.team_fcollect_on_stream(stream, Team::World, dst, src)
    }

    /// `nvshmemx_fcollectmem_on_stream` over `team`: the `src` of the team's
    /// PE `i` lands at offset `i * src.len()` of `dst` on every member
    /// (`team_n_pes * src.len()` elements). **Collective over the team.**
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let team = nvshmem_host::Team::Node;
    /// let mine = nv.alloc_from(&[1.5f32; 3])?;
    /// let all = nv.alloc_zeroed::<f32>(3 * nv.team_n_pes(team)? as usize)?;
    /// nv.team_fcollect_on_stream(nv.stream(), team, &all, &mine)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn team_fcollect_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        team: impl AsTeam,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
    ) -> Result<()> {
        const WHAT: &str = "fcollect_on_stream";
        let (t, n) = self.enter_team(stream, &team, WHAT)?;
        let (dst, src) = (
            own(self, dst.as_sym_view(), WHAT)?,
            own(self, src.as_sym_view(), WHAT)?,
        );
        check_blocks(WHAT, "destination", dst.len(), n, src.len())?;
        // SAFETY: dst holds n blocks of src's size.
        let status = unsafe {
            self.inner.lib.nvshmemx_fcollectmem_on_stream(
                t,
                dst.raw().cast(),
                src.raw().cast(),
                src.size_bytes(),
                stream.cu_stream(),
            )
        };
        check_status("nvshmemx_fcollectmem_on_stream", status)
    }

    /// `nvshmemx_alltoallmem_on_stream` over every PE: block `j` of PE `i`'s
    /// `src` lands in block `i` of PE `j`'s `dst`; both hold `n_pes` blocks of
    /// equal size. **Collective.** See [`Nvshmem::team_alltoall_on_stream`].
    ///
    /// Refused with [`Error::Unsupported`] in limited MPG ([`Nvshmem::limited_mpg`]:
    /// several PEs on one GPU without MPS), where NVSHMEM would end the process.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let n = nv.n_pes() as usize;
    /// let (src, dst) = (nv.alloc_zeroed::<f32>(8 * n)?, nv.alloc_zeroed::<f32>(8 * n)?);
    /// nv.alltoall_on_stream(nv.stream(), &dst, &src)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn alltoall_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
    ) -> Result<()> {
        self.team_alltoall_on_stream(stream, Team::World, dst, src)
    }

    /// `nvshmemx_alltoallmem_on_stream` over `team`: block `j` of the `src` of
    /// the team's PE `i` lands in block `i` of the `dst` of its PE `j`; both
    /// hold `team_n_pes` equal blocks. **Collective over the team.**
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let team = nvshmem_host::Team::Node;
    /// let n = nv.team_n_pes(team)? as usize;
    /// let (src, dst) = (nv.alloc_zeroed::<u16>(5 * n)?, nv.alloc_zeroed::<u16>(5 * n)?);
    /// nv.team_alltoall_on_stream(nv.stream(), team, &dst, &src)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn team_alltoall_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        team: impl AsTeam,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
    ) -> Result<()> {
        const WHAT: &str = "alltoall_on_stream";
        let (t, n) = self.enter_team(stream, &team, WHAT)?;
        let (dst, src) = (
            own(self, dst.as_sym_view(), WHAT)?,
            own(self, src.as_sym_view(), WHAT)?,
        );
        same_len(WHAT, &dst, &src)?;
        if src.len() % n as usize != 0 {
            return Err(Error::bad_size(format!(
                "{WHAT}: {} elements do not split into {n} equal blocks",
                src.len()
            )));
        }
        // SAFETY: both hold n blocks of size_bytes / n.
        let status = unsafe {
            self.inner.lib.nvshmemx_alltoallmem_on_stream(
                t,
                dst.raw().cast(),
                src.raw().cast(),
                src.size_bytes() / n as usize,
                stream.cu_stream(),
            )
        };
        check_status("nvshmemx_alltoallmem_on_stream", status)
    }

    /// `nvshmemx_TYPE_OP_reduce_on_stream` over `team`: `dst[k]` on every
    /// member becomes `op` ([`Sum`](crate::Sum), [`Max`](crate::Max), ...,
    /// see [`ReduceOp`] for which types each takes) over the members' `src[k]`.
    /// `dst` and `src` have the same length; they may be the same buffer.
    /// **Collective over the team.** Refused in limited MPG.
    ///
    /// ```no_run
    /// use nvshmem_host::{Sum, Team};
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let grads = nv.alloc_from(&[1.0f32; 1001])?;
    /// nv.reduce_on_stream(nv.stream(), Team::World, Sum, &grads, &grads)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn reduce_on_stream<T: Pod, O: ReduceOp<T>>(
        &self,
        stream: &CudaStream,
        team: impl AsTeam,
        op: O,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
    ) -> Result<()> {
        const WHAT: &str = "reduce_on_stream";
        let _ = op;
        let (t, _) = self.enter_team(stream, &team, WHAT)?;
        let (dst, src) = (
            own(self, dst.as_sym_view(), WHAT)?,
            own(self, src.as_sym_view(), WHAT)?,
        );
        same_len(WHAT, &dst, &src)?;
        self.typed_reduce::<T, O>(WHAT, "reduce", t, dst.raw(), src.raw(), src.len(), stream)
    }

    /// `nvshmemx_TYPE_OP_reducescatter_on_stream` over `team`: `src` holds
    /// `team_n_pes` blocks of `dst.len()` elements; `dst` on the team's PE `i`
    /// becomes `op` over the members' block `i`. **Collective over the team.**
    /// Refused in limited MPG.
    ///
    /// ```no_run
    /// use nvshmem_host::{Max, Team};
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let n = nv.n_pes() as usize;
    /// let (src, dst) = (nv.alloc_zeroed::<i32>(7 * n)?, nv.alloc_zeroed::<i32>(7)?);
    /// nv.reducescatter_on_stream(nv.stream(), Team::World, Max, &dst, &src)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn reducescatter_on_stream<T: Pod, O: ReduceOp<T>>(
        &self,
        stream: &CudaStream,
        team: impl AsTeam,
        op: O,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
    ) -> Result<()> {
        const WHAT: &str = "reducescatter_on_stream";
        let _ = op;
        let (t, n) = self.enter_team(stream, &team, WHAT)?;
        let (dst, src) = (
            own(self, dst.as_sym_view(), WHAT)?,
            own(self, src.as_sym_view(), WHAT)?,
        );
        check_blocks(WHAT, "source", src.len(), n, dst.len())?;
        self.typed_reduce::<T, O>(
            WHAT,
            "reducescatter",
            t,
            dst.raw(),
            src.raw(),
            dst.len(),
            stream,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn typed_reduce<T: Pod, O: ReduceOp<T>>(
        &self,
        what: &'static str,
        kind: &str,
        team: i32,
        dst: *mut T,
        src: *const T,
        nreduce: usize,
        stream: &CudaStream,
    ) -> Result<()> {
        // SAFETY: `O: ReduceOp<T>` names NVSHMEM's function for exactly `T`.
        let lib = self.inner.lib;
        let f = unsafe { lib.coll.reduce_fn::<T>(O::NAME, kind) }.map_err(|e| {
            Error::NvshmemUnusable {
                path: lib.path().to_path_buf(),
                reason: format!("{what}: {e}"),
            }
        })?;
        // SAFETY: symmetric ranges of the sizes checked by the caller; a live team.
        let status = unsafe { f(team, dst, src, nreduce, stream.cu_stream()) };
        check_status(
            if kind == "reduce" {
                "nvshmemx_TYPE_OP_reduce_on_stream"
            } else {
                "nvshmemx_TYPE_OP_reducescatter_on_stream"
            },
            status,
        )
    }

    /// Checks a team collective's stream and team, refuses limited MPG, and
    /// returns the team's handle and size.
    fn enter_team(
        &self,
        stream: &CudaStream,
        team: &impl AsTeam,
        what: &'static str,
    ) -> Result<(i32, u32)> {
        enter_on(self, stream, what)?;
        let n = self.team_n_pes(team)?;
        self.inner.check_full_mpg(what)?;
        Ok((team.device().raw(), n))
    }

    /// `nvshmemx_barrier_on_stream` over `team`: a barrier among its PEs, with
    /// their puts complete. **Collective over the team.**
    ///
    /// Refused with [`Error::Unsupported`] in limited MPG ([`Nvshmem::limited_mpg`]:
    /// several PEs on one GPU without MPS), where NVSHMEM would end the process.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// nv.team_barrier_on_stream(nv.stream(), nvshmem_host::Team::Node)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn team_barrier_on_stream(&self, stream: &CudaStream, team: impl AsTeam) -> Result<()> {
        let (t, _) = self.enter_team(stream, &team, "team_barrier_on_stream")?;
        // SAFETY: a live team and a stream of this context.
        let status = unsafe {
            self.inner
                .lib
                .nvshmemx_barrier_on_stream(t, stream.cu_stream())
        };
        check_status("nvshmemx_barrier_on_stream", status)
    }

    /// `nvshmemx_team_sync_on_stream`: a sync among `team`'s PEs.
    /// **Collective over the team.**
    ///
    /// Refused with [`Error::Unsupported`] in limited MPG ([`Nvshmem::limited_mpg`]:
    /// several PEs on one GPU without MPS), where NVSHMEM would end the process.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// nv.team_sync_on_stream(nv.stream(), nvshmem_host::Team::World)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn team_sync_on_stream(&self, stream: &CudaStream, team: impl AsTeam) -> Result<()> {
        let (t, _) = self.enter_team(stream, &team, "team_sync_on_stream")?;
        // SAFETY: as above.
        let status = unsafe {
            self.inner
                .lib
                .nvshmemx_team_sync_on_stream(t, stream.cu_stream())
        };
        check_status("nvshmemx_team_sync_on_stream", status)
    }

    /// `nvshmem_barrier_all`, from the host: waits for every PE, with all
    /// puts complete. Blocks this thread. **Collective.**
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// nv.barrier_all()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn barrier_all(&self) -> Result<()> {
        self.inner.enter("barrier_all")?;
        // SAFETY: initialized.
        unsafe { self.inner.lib.nvshmem_barrier_all() };
        Ok(())
    }

    /// `nvshmem_sync_all`, from the host: waits for every PE. **Collective.**
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// nv.sync_all()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn sync_all(&self) -> Result<()> {
        self.inner.enter("sync_all")?;
        // SAFETY: initialized.
        unsafe { self.inner.lib.nvshmem_sync_all() };
        Ok(())
    }

    /// `nvshmem_quiet`, from the host: completes this PE's host-issued operations.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// nv.quiet()?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn quiet(&self) -> Result<()> {
        self.inner.enter("quiet")?;
        // SAFETY: initialized.
        unsafe { self.inner.lib.nvshmem_quiet() };
        Ok(())
    }
}

/// `big` holds `n` blocks of `block` elements.
fn check_blocks(what: &str, which: &str, big: usize, n: u32, block: usize) -> Result<()> {
    if block.checked_mul(n as usize) == Some(big) {
        Ok(())
    } else {
        Err(Error::bad_size(format!(
            "{what}: the {which} needs team_n_pes ({n}) x {block} elements, it has {big}"
        )))
    }
}

fn check_status(call: &'static str, status: i32) -> Result<()> {
    if status == 0 {
        Ok(())
    } else {
        Err(Error::NvshmemCall { call, status })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_map_to_the_header_constants() {
        assert_eq!(SignalOp::Set.to_c(), 9);
        assert_eq!(SignalOp::Add.to_c(), 10);
        assert_eq!(
            [Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Le, Cmp::Lt, Cmp::Ge].map(Cmp::to_c),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(Team::World.to_c(), 0);
        assert_eq!(Team::Node.to_c(), 2);
    }

    #[test]
    fn block_counts_are_checked() {
        assert!(check_blocks("fcollect", "destination", 21, 3, 7).is_ok());
        let e = check_blocks("fcollect", "destination", 20, 3, 7).unwrap_err();
        assert!(
            e.to_string()
                .contains("team_n_pes (3) x 7 elements, it has 20"),
            "{e}"
        );
    }
}
