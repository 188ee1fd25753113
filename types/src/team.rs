//! NVSHMEM teams, as handles that are valid by construction.

/// An NVSHMEM team (`nvshmem_team_t`): a set of PEs that collectives run over.
///
/// NVSHMEM's device code indexes its team table with the handle without a
/// check, so a `Team` cannot be made from an arbitrary number in safe code:
/// the predefined teams are constants, a team split by the host comes from
/// `nvshmem_host::SplitTeam` (as a kernel argument), and
/// [`Team::from_raw`] is `unsafe`. There is no "invalid team" value: a split
/// that leaves this PE out gives no `Team` at all.
///
/// It is `#[repr(transparent)]` over NVSHMEM's `int32_t` handle, so it is a
/// valid kernel parameter. PE numbers passed with a team (a broadcast's root,
/// the PE of a translation) are numbers *within* that team.
///
/// ```
/// use nvshmem_types::Team;
/// assert_eq!(Team::WORLD.raw(), 0);
/// assert_eq!(Team::SAME_MYPE_NODE.raw(), 3);
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Team(i32);

impl Team {
    /// Every PE (`NVSHMEM_TEAM_WORLD`).
    pub const WORLD: Team = Team(0);
    /// The PEs that share memory with this one (`NVSHMEM_TEAM_SHARED`).
    pub const SHARED: Team = Team(1);
    /// The PEs on this node (`NVSHMEMX_TEAM_NODE`).
    pub const NODE: Team = Team(2);
    /// The PEs, one per node, whose rank on their node equals this PE's
    /// (`NVSHMEMX_TEAM_SAME_MYPE_NODE`): the team of a hierarchical
    /// collective's inter-node step.
    pub const SAME_MYPE_NODE: Team = Team(3);

    /// The predefined teams, in handle order.
    pub const PREDEFINED: [Team; 4] = [Team::WORLD, Team::SHARED, Team::NODE, Team::SAME_MYPE_NODE];

    /// Wraps a raw `nvshmem_team_t`.
    ///
    /// # Safety
    /// `raw` must be a live team of this NVSHMEM job that this PE belongs to:
    /// predefined, or created by a split and not destroyed while in use.
    /// Never `NVSHMEM_TEAM_INVALID` (-1).
    ///
    /// ```
    /// let t = unsafe { nvshmem_types::Team::from_raw(0) };
    /// assert_eq!(t, nvshmem_types::Team::WORLD);
    /// ```
    pub const unsafe fn from_raw(raw: i32) -> Self {
        Team(raw)
    }

    /// The raw `nvshmem_team_t`.
    ///
    /// ```
    /// assert_eq!(nvshmem_types::Team::NODE.raw(), 2);
    /// ```
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// The raw handle as a function of NVSHMEM's C API takes it.
    ///
    /// ```
    /// assert_eq!(nvshmem_types::Team::SHARED.to_c(), 1);
    /// ```
    pub const fn to_c(self) -> i32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_handles_are_nvshmems() {
        // device_host/nvshmem_common.cuh: WORLD_INDEX 0, SHARED_INDEX 1,
        // NODE_INDEX 2, NVSHMEMX_TEAM_SAME_MYPE_NODE 3.
        let raw: [i32; 4] = Team::PREDEFINED.map(Team::raw);
        assert_eq!(raw, [0, 1, 2, 3]);
    }
}
