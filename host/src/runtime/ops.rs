//! NVSHMEM operations issued from the host, between two PEs: stream-ordered
//! (`*_on_stream`, the usual way, ordered with kernels on the same stream)
//! puts, gets and signals, and the host-blocking barrier, sync and quiet.
//! Team collectives are in `collectives.rs`. The stream operations on
//! buffers or teams refuse a stream that is capturing a CUDA graph (see
//! `Inner::enter_stream`); `barrier_all_on_stream`, `sync_all_on_stream` and
//! `quiet_on_stream` may be captured.

use crate::error::{Error, Result};
use crate::runtime::memory::{AsSymView, SymView};
use crate::runtime::nvshmem::Nvshmem;
use bytemuck::Pod;
use cudarc::driver::CudaStream;
use nvshmem_types::{Cmp, Pe, SignalOp};

/// Checks a stream operation's arguments and makes the context current.
pub(crate) fn enter_on(nv: &Nvshmem, stream: &CudaStream, what: &'static str) -> Result<()> {
    nv.inner.enter_stream(stream, what)
}

/// Checks that `view` belongs to this `Nvshmem` (not a finalized earlier one).
pub(crate) fn own<'a, T: Pod>(
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

/// [`own`] of both views of a two-buffer operation.
pub(crate) fn own_pair<'a, T: Pod>(
    nv: &Nvshmem,
    dst: &'a impl AsSymView<T>,
    src: &'a impl AsSymView<T>,
    what: &'static str,
) -> Result<(SymView<'a, T>, SymView<'a, T>)> {
    Ok((
        own(nv, dst.as_sym_view(), what)?,
        own(nv, src.as_sym_view(), what)?,
    ))
}

/// Checks a put or get between this PE and `pe`: the stream, `pe`, and two
/// views of this `Nvshmem` of the same length.
fn rma_pair<'a, T: Pod>(
    nv: &Nvshmem,
    stream: &CudaStream,
    dst: &'a impl AsSymView<T>,
    src: &'a impl AsSymView<T>,
    pe: Pe,
    what: &'static str,
) -> Result<(SymView<'a, T>, SymView<'a, T>)> {
    enter_on(nv, stream, what)?;
    nv.inner.check_pe(pe)?;
    let (dst, src) = own_pair(nv, dst, src, what)?;
    same_len(what, &dst, &src)?;
    if pe == nv.my_pe() {
        apart(what, &dst, &src, true)?;
    }
    Ok((dst, src))
}

/// Whether byte ranges `[d, d + dn)` and `[s, s + sn)` are apart, or (with
/// `same_allowed`) the very same range.
fn ranges_apart(d: usize, dn: usize, s: usize, sn: usize, same_allowed: bool) -> bool {
    let before = |a: usize, n: usize, b: usize| a.checked_add(n).is_some_and(|end| end <= b);
    before(d, dn, s) || before(s, sn, d) || (same_allowed && d == s && dn == sn)
}

/// A destination and a source on this PE must not overlap: a copy reads its
/// source while it writes its destination (NVSHMEM copies like `memcpy`, not
/// `memmove`), and a collective's PEs read sources that others' destinations
/// would overwrite (OpenSHMEM's rule). `same_allowed` lets the very same range
/// pass: a copy onto itself is a no-op, and reductions and broadcast work in
/// place (not fcollect or alltoall).
pub(crate) fn apart<T: Pod>(
    what: &str,
    dst: &SymView<'_, T>,
    src: &SymView<'_, T>,
    same_allowed: bool,
) -> Result<()> {
    let (d, s) = (dst.raw() as usize, src.raw() as usize);
    let (dn, sn) = (dst.size_bytes(), src.size_bytes());
    if ranges_apart(d, dn, s, sn, same_allowed) {
        return Ok(());
    }
    let fix = if same_allowed {
        "pass the same view for both, or separate buffers"
    } else {
        "use separate buffers"
    };
    Err(Error::InvalidArgument {
        reason: format!(
            "{what}: the destination ({dn} bytes) and the source ({sn} bytes) overlap on this PE \
             ({} bytes apart); {fix}",
            d.abs_diff(s)
        ),
    })
}

pub(crate) fn same_len<T: Pod>(
    what: &str,
    dst: &SymView<'_, T>,
    src: &SymView<'_, T>,
) -> Result<()> {
    same_lengths(what, dst.len(), src.len())
}

/// A destination and a source of `dst` and `src` elements have the same length.
pub(crate) fn same_lengths(what: &str, dst: usize, src: usize) -> Result<()> {
    if dst == src {
        Ok(())
    } else {
        Err(Error::bad_size(format!(
            "{what}: destination has {dst} elements, source {src}"
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

/// Generates the stream-ordered collectives that take only a stream. They
/// touch no buffer of the caller's, so a CUDA graph may capture them.
macro_rules! collective_on_stream {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self, stream: &CudaStream) -> Result<()> {
            self.inner.enter(stringify!($name))?;
            self.inner.check_stream(stream)?;
            // SAFETY: initialized; a stream of this context. The collective
            // rule (every PE calls it) is NVSHMEM's, as documented.
            unsafe { self.inner.lib.raw().$ffi(stream.cu_stream()) };
            Ok(())
        }
    )*};
}

/// Generates the host-blocking calls that take no argument.
macro_rules! host_blocking {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> Result<()> {
            self.inner.enter(stringify!($name))?;
            // SAFETY: initialized.
            unsafe { self.inner.lib.raw().$ffi() };
            Ok(())
        }
    )*};
}

/// Generates the put and get variants: (dest, source) in the C argument order.
macro_rules! rma_on_stream {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// Errors: [`Error::BadSize`] when the lengths differ;
        /// [`Error::InvalidArgument`] when `pe` is this PE and the two ranges
        /// partly overlap.
        pub fn $name<T: Pod>(
            &self,
            stream: &CudaStream,
            dst: &impl AsSymView<T>,
            src: &impl AsSymView<T>,
            pe: Pe,
        ) -> Result<()> {
            let (dst, src) = rma_pair(self, stream, dst, src, pe, stringify!($name))?;
            // SAFETY: both are symmetric ranges of equal length in this PE's
            // heap; `pe` is valid.
            unsafe {
                self.inner.lib.raw().$ffi(dst.raw().cast(), src.raw().cast(), dst.size_bytes(), pe.to_c(), stream.cu_stream())
            };
            Ok(())
        }
    )*};
}

/// Generates the put-with-signal variants: put `src` into `pe`'s `dst`, then
/// update `pe`'s one-word `signal`.
macro_rules! put_signal_on_stream {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {$(
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Pod>(
            &self,
            stream: &CudaStream,
            dst: &impl AsSymView<T>,
            src: &impl AsSymView<T>,
            signal: &impl AsSymView<u64>,
            value: u64,
            op: SignalOp,
            pe: Pe,
        ) -> Result<()> {
            const WHAT: &str = stringify!($name);
            let (dst, src) = rma_pair(self, stream, dst, src, pe, WHAT)?;
            let sig = signal_word(self, signal, WHAT)?;
            // SAFETY: symmetric ranges of equal length, a symmetric u64, a valid PE.
            unsafe {
                self.inner.lib.raw().$ffi(
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
        sync_all_on_stream => nvshmemx_sync_all_on_stream;
        /// `nvshmemx_quiet_on_stream`: completes this PE's earlier puts,
        /// gets and atomics, in stream order.
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
        get_on_stream => nvshmemx_getmem_on_stream;
        /// `nvshmemx_putmem_nbi_on_stream`: a put that completes at the next
        /// quiet or barrier rather than in stream order.
        put_nbi_on_stream => nvshmemx_putmem_nbi_on_stream;
        /// `nvshmemx_getmem_nbi_on_stream`: a get that completes at the next quiet.
        get_nbi_on_stream => nvshmemx_getmem_nbi_on_stream;
    }

    put_signal_on_stream! {
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
        put_signal_on_stream => nvshmemx_putmem_signal_on_stream;
        /// `nvshmemx_putmem_signal_nbi_on_stream`: [`Nvshmem::put_signal_on_stream`]
        /// that completes at the next quiet or barrier rather than in stream order
        /// (the signal still arrives after the data).
        put_signal_nbi_on_stream => nvshmemx_putmem_signal_nbi_on_stream;
    }

    /// `nvshmemx_signal_op_on_stream`: updates `pe`'s `signal` word with `op`
    /// and `value`, in stream order.
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
            self.inner.lib.raw().nvshmemx_signal_op_on_stream(
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
            self.inner.lib.raw().nvshmemx_signal_wait_until_on_stream(
                sig.raw(),
                cmp.to_c(),
                value,
                stream.cu_stream(),
            )
        };
        Ok(())
    }

    host_blocking! {
        /// `nvshmem_barrier_all`, from the host: waits for every PE, with all
        /// puts complete. Blocks this thread. **Collective.**
        barrier_all => nvshmem_barrier_all;
        /// `nvshmem_sync_all`, from the host: waits for every PE. **Collective.**
        sync_all => nvshmem_sync_all;
        /// `nvshmem_quiet`, from the host: completes this PE's host-issued operations.
        quiet => nvshmem_quiet;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_ranges_are_told_apart() {
        // Disjoint either way, touching ends included.
        assert!(ranges_apart(0, 16, 16, 16, false));
        assert!(ranges_apart(32, 16, 0, 32, false));
        // Partly overlapping: never.
        assert!(!ranges_apart(0, 16, 8, 16, true));
        assert!(!ranges_apart(8, 16, 0, 16, true));
        // The very same range only where allowed; a range inside another never.
        assert!(ranges_apart(64, 16, 64, 16, true));
        assert!(!ranges_apart(64, 16, 64, 16, false));
        assert!(!ranges_apart(64, 64, 64, 16, true));
        // An end past the address space is not "before" anything.
        assert!(!ranges_apart(usize::MAX - 4, 16, usize::MAX - 2, 1, false));
    }

    #[test]
    fn enums_map_to_the_header_constants() {
        assert_eq!(SignalOp::Set.to_c(), 9);
        assert_eq!(SignalOp::Add.to_c(), 10);
        assert_eq!(
            [Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Le, Cmp::Lt, Cmp::Ge].map(Cmp::to_c),
            [0, 1, 2, 3, 4, 5]
        );
    }
}
