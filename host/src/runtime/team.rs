//! Teams: one concept on both sides, [`nvshmem_types::Team`] (re-exported as
//! [`Team`](crate::Team)). The predefined teams are its constants
//! (`Team::WORLD`, `SHARED`, `NODE`, `SAME_MYPE_NODE`); a team split on the
//! host is a [`SplitTeam`], which owns the handle (destroyed on drop) and
//! gives the `Team` to pass to kernels ([`AsTeam::team`]). Host functions
//! take either ([`AsTeam`]).
//!
//! ```no_run
//! use nvshmem_host::{AsTeam, Nvshmem, Team};
//! let nv = Nvshmem::init()?;
//! // The even PEs: 0, 2, 4, ... (collective over the parent team).
//! let evens = nv.split_strided(Team::WORLD, 0, 2, nv.n_pes().div_ceil(2))?;
//! if let Some(evens) = &evens {
//!     println!("PE {} of {} evens", nv.team_my_pe(evens)?.index(), nv.team_n_pes(evens)?);
//!     let kernel_arg: Team = evens.team(); // valid while `evens` lives
//! }
//! # Ok::<(), nvshmem_host::Error>(())
//! ```

use crate::error::record_drop_error;
use crate::error::{Error, Result, nvshmem_status};
use crate::runtime::nvshmem::{Inner, Nvshmem};
use nvshmem_types::{Pe, Team};
use std::rc::Rc;

/// A team the host API can name: a [`Team`] or a [`SplitTeam`] (or a
/// reference to one). Sealed.
///
/// ```
/// use nvshmem_host::{AsTeam, Team};
/// fn id(t: impl AsTeam) -> i32 { t.team().raw() }
/// assert_eq!(id(Team::NODE), 2);
/// ```
pub trait AsTeam: sealed::Sealed {
    /// The team, as a kernel that takes a [`Team`] receives it.
    fn team(&self) -> Team;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for nvshmem_types::Team {}
    impl Sealed for super::SplitTeam {}
    impl<T: Sealed + ?Sized> Sealed for &T {}
}

impl AsTeam for Team {
    fn team(&self) -> Team {
        *self
    }
}

impl<T: AsTeam + ?Sized> AsTeam for &T {
    fn team(&self) -> Team {
        (**self).team()
    }
}

/// A team split from another ([`Nvshmem::split_strided`], [`Nvshmem::split_2d`]),
/// held by each of its members; destroyed (`nvshmem_team_destroy`) on drop or
/// by [`SplitTeam::destroy`].
///
/// **Destruction is collective over the team**: every member drops (or
/// destroys) it, in the same order relative to other collectives, after the
/// kernels that use it are done. A failure in `Drop` is recorded for
/// [`take_drop_error`](crate::take_drop_error), as for buffers. It keeps NVSHMEM
/// alive, like a buffer, so it can be dropped after the [`Nvshmem`].
///
/// ```no_run
/// use nvshmem_host::{AsTeam, Nvshmem, Team};
/// let nv = Nvshmem::init()?;
/// let (rows, cols) = nv.split_2d(Team::WORLD, 2)?;
/// if let Some(row) = rows {
///     let handle = row.team(); // a kernel argument
///     row.destroy()?;
/// }
/// # Ok::<(), nvshmem_host::Error>(())
/// ```
pub struct SplitTeam {
    inner: Rc<Inner>,
    raw: i32,
    destroyed: bool,
}

impl std::fmt::Debug for SplitTeam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitTeam").field("raw", &self.raw).finish()
    }
}

impl AsTeam for SplitTeam {
    /// The handle, valid until this `SplitTeam` is dropped: kernels that use
    /// it must be done by then (a kernel launch is `unsafe` for that reason).
    fn team(&self) -> Team {
        // SAFETY: the team lives until this value is dropped.
        unsafe { Team::from_raw(self.raw) }
    }
}

impl SplitTeam {
    /// Destroys the team now and reports failure (a `Drop` only records it).
    /// **Collective over the team.**
    ///
    pub fn destroy(mut self) -> Result<()> {
        self.destroy_now()
    }

    fn destroy_now(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.destroyed, true) {
            return Ok(());
        }
        self.inner
            .split_teams
            .borrow_mut()
            .retain(|&t| t != self.raw);
        // After finalize the team is gone with NVSHMEM; after a kernel fault
        // NVSHMEM's teardown would abort the process.
        if self.inner.check_active("SplitTeam::destroy").is_err() || self.inner.poisoned() {
            return Ok(());
        }
        self.inner.enter("SplitTeam::destroy")?;
        self.inner.sync_context()?;
        // SAFETY: a team this runtime split and has not destroyed; the GPU is idle.
        unsafe { self.inner.lib.raw().nvshmem_team_destroy(self.raw) };
        Ok(())
    }
}

impl Drop for SplitTeam {
    fn drop(&mut self) {
        record_drop_error(self.destroy_now());
    }
}

fn pe_or_none(pe: i32) -> Option<Pe> {
    u32::try_from(pe).ok().map(Pe::new)
}

impl Nvshmem {
    /// The team's handle, once it is known to be live: predefined, or split
    /// by this runtime and not destroyed (a `Team` copied out of a dropped
    /// [`SplitTeam`] is refused, not handed to NVSHMEM).
    fn check_team(&self, team: &impl AsTeam, what: &'static str) -> Result<i32> {
        self.inner.enter(what)?;
        let team = team.team();
        let live = Team::PREDEFINED.contains(&team)
            || self.inner.split_teams.borrow().contains(&team.raw());
        if live {
            Ok(team.raw())
        } else {
            Err(Error::InvalidArgument {
                reason: format!(
                    "{what}: team {} is not a predefined team nor a live SplitTeam of this \
                     runtime (was its SplitTeam dropped?)",
                    team.raw()
                ),
            })
        }
    }

    /// This PE's number within `team`.
    pub fn team_my_pe(&self, team: impl AsTeam) -> Result<Pe> {
        let raw = self.check_team(&team, "Nvshmem::team_my_pe")?;
        // SAFETY: initialized; a live team.
        let pe = unsafe { self.inner.lib.raw().nvshmem_team_my_pe(raw) };
        pe_or_none(pe).ok_or(Error::NvshmemCall {
            call: "nvshmem_team_my_pe",
            status: pe,
        })
    }

    /// The number of PEs in `team`.
    pub fn team_n_pes(&self, team: impl AsTeam) -> Result<u32> {
        let raw = self.check_team(&team, "Nvshmem::team_n_pes")?;
        // SAFETY: as above.
        let n = unsafe { self.inner.lib.raw().nvshmem_team_n_pes(raw) };
        u32::try_from(n).map_err(|_| Error::NvshmemCall {
            call: "nvshmem_team_n_pes",
            status: n,
        })
    }

    /// The number in `dest` of PE `pe` of team `src` (`nvshmem_team_translate_pe`),
    /// or `None` when that PE is not in `dest`.
    pub fn team_translate_pe(
        &self,
        src: impl AsTeam,
        pe: Pe,
        dest: impl AsTeam,
    ) -> Result<Option<Pe>> {
        let s = self.check_team(&src, "Nvshmem::team_translate_pe")?;
        let d = self.check_team(&dest, "Nvshmem::team_translate_pe")?;
        // NVSHMEM indexes the source team's PE table without a range check.
        if pe.index() >= self.team_n_pes(src)? {
            return Ok(None);
        }
        // SAFETY: live teams and `pe` in `src`; NVSHMEM returns -1 for a PE
        // not in `dest`.
        Ok(pe_or_none(unsafe {
            self.inner
                .lib
                .raw()
                .nvshmem_team_translate_pe(s, pe.to_c(), d)
        }))
    }

    /// Splits `parent` into the team of its PEs `start, start + stride, ...`
    /// (`size` of them; `nvshmem_team_split_strided`, with the default
    /// configuration). Returns the new team on its members, `None` on the
    /// others. **Collective over `parent`**: every PE of it calls this with
    /// the same arguments.
    ///
    /// Refused with [`Error::Unsupported`] in limited MPG ([`Nvshmem::limited_mpg`]:
    /// several PEs on one GPU without MPS), where NVSHMEM would end the process.
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// // PEs 1, 3, 5, ... of the world.
    /// let odds = nv.split_strided(nvshmem_host::Team::WORLD, 1, 2, nv.n_pes() / 2)?;
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn split_strided(
        &self,
        parent: impl AsTeam,
        start: u32,
        stride: u32,
        size: u32,
    ) -> Result<Option<SplitTeam>> {
        const WHAT: &str = "Nvshmem::split_strided";
        let p = self.check_team(&parent, WHAT)?;
        let n = self.team_n_pes(&parent)?;
        check_strided(n, start, stride, size)?;
        self.inner.check_full_mpg(WHAT)?;
        let mut new = -1;
        // SAFETY: a live parent; the range is inside it; a null config with a
        // zero mask means the defaults.
        let status = unsafe {
            self.inner.lib.raw().nvshmem_team_split_strided(
                p,
                start as i32,
                stride as i32,
                size as i32,
                std::ptr::null(),
                0,
                &mut new,
            )
        };
        nvshmem_status("nvshmem_team_split_strided", status)?;
        Ok(self.split_team(new))
    }

    /// Splits `parent` into a 2-D grid with `xrange` PEs per row
    /// (`nvshmem_team_split_2d`): returns this PE's row (x-axis) team and
    /// column (y-axis) team. **Collective over `parent`**. Refused in limited
    /// MPG, as [`Nvshmem::split_strided`].
    pub fn split_2d(
        &self,
        parent: impl AsTeam,
        xrange: u32,
    ) -> Result<(Option<SplitTeam>, Option<SplitTeam>)> {
        const WHAT: &str = "Nvshmem::split_2d";
        let p = self.check_team(&parent, WHAT)?;
        if xrange == 0 || xrange > i32::MAX as u32 {
            return Err(Error::InvalidArgument {
                reason: format!("{WHAT}: xrange must be at least 1, not {xrange}"),
            });
        }
        self.inner.check_full_mpg(WHAT)?;
        let (mut x, mut y) = (-1, -1);
        // SAFETY: a live parent; null configs with zero masks mean the defaults.
        let status = unsafe {
            self.inner.lib.raw().nvshmem_team_split_2d(
                p,
                xrange as i32,
                std::ptr::null(),
                0,
                &mut x,
                std::ptr::null(),
                0,
                &mut y,
            )
        };
        nvshmem_status("nvshmem_team_split_2d", status)?;
        Ok((self.split_team(x), self.split_team(y)))
    }

    fn split_team(&self, raw: i32) -> Option<SplitTeam> {
        (raw >= 0).then(|| {
            self.inner.split_teams.borrow_mut().push(raw);
            SplitTeam {
                inner: self.inner.clone(),
                raw,
                destroyed: false,
            }
        })
    }
}

/// The strided range `start + k * stride` (`k < size`) lies inside a team of `n` PEs.
fn check_strided(n: u32, start: u32, stride: u32, size: u32) -> Result<()> {
    let last = (size.max(1) as u64 - 1) * stride as u64 + start as u64;
    if size == 0 || last >= n as u64 || (size > 1 && stride == 0) || last > i32::MAX as u64 {
        return Err(Error::InvalidArgument {
            reason: format!(
                "Nvshmem::split_strided: start {start}, stride {stride}, size {size} is not a range of \
                 distinct PEs of the parent team's {n}"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_ranges_are_checked_before_nvshmem_sees_them() {
        assert!(check_strided(4, 0, 2, 2).is_ok());
        assert!(check_strided(4, 1, 2, 2).is_ok());
        assert!(check_strided(4, 3, 0, 1).is_ok());
        assert!(check_strided(4, 0, 1, 4).is_ok());
        assert!(check_strided(4, 0, 2, 3).is_err()); // PE 4
        assert!(check_strided(4, 0, 1, 0).is_err());
        assert!(check_strided(4, 0, 0, 2).is_err());
        let e = check_strided(3, 1, 1, 3).unwrap_err().to_string();
        assert!(e.contains("start 1, stride 1, size 3"), "{e}");
    }
}
