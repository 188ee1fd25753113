//! Collectives issued from the host, ordered on a stream: broadcast,
//! fcollect, alltoall, reductions, and team barriers and syncs. Each is
//! **collective over its team** and refused in limited MPG, where NVSHMEM
//! would end the process ([`Nvshmem::limited_mpg`]).

use crate::error::{Error, Result, nvshmem_status};
use crate::runtime::memory::AsSymView;
use crate::runtime::memory::SymView;
use crate::runtime::nvshmem::Nvshmem;
use crate::runtime::ops::{apart, enter_on, own_pair, same_len, same_lengths};
use crate::runtime::team::AsTeam;
use crate::sys::{NvshmemLib, cudaStream_t, nvshmem_team_t};
use bytemuck::Pod;
use cudarc::driver::CudaStream;
use nvshmem_types::{Pe, ReduceOp};
use std::ffi::c_int;

/// A `nvshmemx_*_on_stream` barrier or sync of a team: its name and function.
type TeamOnStream = (
    &'static str,
    unsafe fn(&NvshmemLib, nvshmem_team_t, cudaStream_t) -> c_int,
);
const BARRIER: TeamOnStream = (
    "nvshmemx_barrier_on_stream",
    NvshmemLib::nvshmemx_barrier_on_stream,
);
const TEAM_SYNC: TeamOnStream = (
    "nvshmemx_team_sync_on_stream",
    NvshmemLib::nvshmemx_team_sync_on_stream,
);

/// Generates the two-buffer team collectives (`dst` and `src` on every PE of
/// `team`). A row's `|dst, src, n| elements` takes the two lengths and the
/// team's size and returns the elements the call moves per PE, or an error
/// where it would run past either buffer. A `mem` row calls NVSHMEM's
/// `nvshmemx_*mem_on_stream` function with that many elements' bytes; a
/// `reduce` row the typed `nvshmemx_TYPE_OP_<kind>_on_stream` with that
/// `nreduce`.
macro_rules! team_collectives {
    ($(
        $(#[$doc:meta])*
        $name:ident: $kind:ident $f:ident, |$d:ident, $s:ident, $n:tt| $elements:expr;
    )*) => {$(
        team_collectives! { @$kind $(#[$doc])* $name $f, |$d, $s, $n| $elements }
    )*};
    (@mem $(#[$doc:meta])* $name:ident $call:ident, |$d:ident, $s:ident, $n:tt| $elements:expr) => {
        $(#[$doc])*
        pub fn $name<T: Pod>(
            &self,
            stream: &CudaStream,
            team: impl AsTeam,
            dst: &impl AsSymView<T>,
            src: &impl AsSymView<T>,
        ) -> Result<()> {
            const WHAT: &str = stringify!($call);
            let (t, n, dst, src) = self.team_pair(stream, &team, dst, src, WHAT)?;
            let ($d, $s, $n) = (dst.len(), src.len(), n);
            let bytes = $elements? * std::mem::size_of::<T>();
            apart(WHAT, &dst, &src, false)?;
            // SAFETY: symmetric ranges that the row's `elements` sized the call for.
            let status = unsafe {
                self.inner.lib.raw().$call(t, dst.raw().cast(), src.raw().cast(), bytes, stream.cu_stream())
            };
            nvshmem_status(WHAT, status)
        }
    };
    (@reduce $(#[$doc:meta])* $name:ident $kind:ident, |$d:ident, $s:ident, $n:tt| $elements:expr) => {
        $(#[$doc])*
        pub fn $name<T: Pod, O: ReduceOp<T>>(
            &self,
            stream: &CudaStream,
            team: impl AsTeam,
            op: O,
            dst: &impl AsSymView<T>,
            src: &impl AsSymView<T>,
        ) -> Result<()> {
            let _ = op;
            const WHAT: &str = stringify!($name);
            let (t, n, dst, src) = self.team_pair(stream, &team, dst, src, WHAT)?;
            let ($d, $s, $n) = (dst.len(), src.len(), n);
            let nreduce = $elements?;
            apart(WHAT, &dst, &src, true)?;
            self.typed_reduce::<T, O>(WHAT, stringify!($kind), t, dst.raw(), src.raw(), nreduce, stream)
        }
    };
}

impl Nvshmem {
    /// `nvshmemx_broadcastmem_on_stream` over `team`: the team's PE `root`'s
    /// `src` lands in `dst` on every PE of the team (same length).
    /// **Collective over the team.**
    ///
    /// ```no_run
    /// use nvshmem_host::{Pe, Team};
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// # let (src, dst) = (nv.alloc_from(&[1u32; 7])?, nv.alloc_zeroed::<u32>(7)?);
    /// nv.broadcast_on_stream(nv.stream(), Team::NODE, &dst, &src, Pe::new(0))?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn broadcast_on_stream<T: Pod>(
        &self,
        stream: &CudaStream,
        team: impl AsTeam,
        dst: &impl AsSymView<T>,
        src: &impl AsSymView<T>,
        root: Pe,
    ) -> Result<()> {
        const WHAT: &str = "broadcast_on_stream";
        let (t, n, dst, src) = self.team_pair(stream, &team, dst, src, WHAT)?;
        if root.index() >= n {
            return Err(Error::InvalidPe {
                pe: root.index(),
                n_pes: n,
            });
        }
        same_len(WHAT, &dst, &src)?;
        apart(WHAT, &dst, &src, true)?;
        // SAFETY: symmetric ranges of equal length; a valid root of a live team.
        let status = unsafe {
            self.inner.lib.raw().nvshmemx_broadcastmem_on_stream(
                t,
                dst.raw().cast(),
                src.raw().cast(),
                dst.size_bytes(),
                root.to_c(),
                stream.cu_stream(),
            )
        };
        nvshmem_status("nvshmemx_broadcastmem_on_stream", status)
    }

    team_collectives! {
        /// `nvshmemx_fcollectmem_on_stream` over `team`: the `src` of the team's
        /// PE `i` lands at offset `i * src.len()` of `dst` on every member
        /// (`team_n_pes * src.len()` elements). **Collective over the team.**
        fcollect_on_stream: mem nvshmemx_fcollectmem_on_stream, |dst, src, n| {
            check_blocks("fcollect_on_stream", "destination", dst, n, src).map(|()| src)
        };

        /// `nvshmemx_alltoallmem_on_stream` over `team`: block `j` of the `src` of
        /// the team's PE `i` lands in block `i` of the `dst` of its PE `j`; both
        /// hold `team_n_pes` equal blocks. **Collective over the team.**
        ///
        /// ```no_run
        /// # let nv = nvshmem_host::Nvshmem::init()?;
        /// let team = nvshmem_host::Team::NODE;
        /// let n = nv.team_n_pes(team)? as usize;
        /// let (src, dst) = (nv.alloc_zeroed::<u16>(5 * n)?, nv.alloc_zeroed::<u16>(5 * n)?);
        /// nv.alltoall_on_stream(nv.stream(), team, &dst, &src)?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        alltoall_on_stream: mem nvshmemx_alltoallmem_on_stream, |dst, src, n| {
            if dst == src && src.is_multiple_of(n as usize) {
                Ok(src / n as usize)
            } else {
                Err(Error::bad_size(format!(
                    "alltoall_on_stream: the destination ({dst} elements) and source ({src}) \
                     must be the same, and split into {n} equal blocks"
                )))
            }
        };

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
        /// nv.reduce_on_stream(nv.stream(), Team::WORLD, Sum, &grads, &grads)?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        reduce_on_stream: reduce reduce, |dst, src, _| {
            same_lengths("reduce_on_stream", dst, src).map(|()| src)
        };

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
        /// nv.reducescatter_on_stream(nv.stream(), Team::WORLD, Max, &dst, &src)?;
        /// # Ok::<(), nvshmem_host::Error>(())
        /// ```
        reducescatter_on_stream: reduce reducescatter, |dst, src, n| {
            check_blocks("reducescatter_on_stream", "source", src, n, dst).map(|()| dst)
        };
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
        nvshmem_status(
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
        Ok((team.team().raw(), n))
    }

    /// [`enter_team`](Self::enter_team), and both views checked to belong
    /// to this `Nvshmem`.
    fn team_pair<'a, T: Pod>(
        &self,
        stream: &CudaStream,
        team: &impl AsTeam,
        dst: &'a impl AsSymView<T>,
        src: &'a impl AsSymView<T>,
        what: &'static str,
    ) -> Result<(i32, u32, SymView<'a, T>, SymView<'a, T>)> {
        let (t, n) = self.enter_team(stream, team, what)?;
        let (dst, src) = own_pair(self, dst, src, what)?;
        Ok((t, n, dst, src))
    }

    /// `nvshmemx_barrier_on_stream` over `team`: a barrier among its PEs, with
    /// their puts complete. **Collective over the team.**
    pub fn team_barrier_on_stream(&self, stream: &CudaStream, team: impl AsTeam) -> Result<()> {
        self.team_on_stream(stream, team, BARRIER)
    }

    /// `nvshmemx_team_sync_on_stream`: a sync among `team`'s PEs.
    /// **Collective over the team.**
    pub fn team_sync_on_stream(&self, stream: &CudaStream, team: impl AsTeam) -> Result<()> {
        self.team_on_stream(stream, team, TEAM_SYNC)
    }

    fn team_on_stream(
        &self,
        stream: &CudaStream,
        team: impl AsTeam,
        (name, call): TeamOnStream,
    ) -> Result<()> {
        let (t, _) = self.enter_team(stream, &team, name)?;
        // SAFETY: a live team and a stream of this context.
        let status = unsafe { call(self.inner.lib.raw(), t, stream.cu_stream()) };
        nvshmem_status(name, status)
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

#[cfg(test)]
mod tests {
    use super::*;

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
