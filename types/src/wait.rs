//! The operators of waits and signals.

/// A comparison for waits (`wait_until`, `test`, `signal_wait_until`, on the
/// device or on a stream): NVSHMEM's `NVSHMEM_CMP_*`
/// (`device_host_transport/nvshmem_constants.h`). The condition is
/// `*ivar <cmp> value`.
///
/// ```
/// use nvshmem_types::Cmp;
/// assert_eq!(Cmp::Eq.to_c(), 0);
/// assert_eq!(Cmp::Ge.to_c(), 5);
/// ```
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `NVSHMEM_CMP_EQ`: equal.
    Eq = 0,
    /// `NVSHMEM_CMP_NE`: not equal.
    Ne = 1,
    /// `NVSHMEM_CMP_GT`: greater than.
    Gt = 2,
    /// `NVSHMEM_CMP_LE`: less than or equal.
    Le = 3,
    /// `NVSHMEM_CMP_LT`: less than.
    Lt = 4,
    /// `NVSHMEM_CMP_GE`: greater than or equal.
    Ge = 5,
}

impl Cmp {
    /// Every comparison.
    pub const ALL: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Le, Cmp::Lt, Cmp::Ge];

    /// The `int` NVSHMEM takes.
    ///
    /// ```
    /// assert_eq!(nvshmem_types::Cmp::Lt.to_c(), 4);
    /// ```
    pub const fn to_c(self) -> i32 {
        self as i32
    }

    /// Whether `lhs <cmp> rhs` holds, as NVSHMEM evaluates the condition.
    ///
    /// ```
    /// assert!(nvshmem_types::Cmp::Ge.holds(3u64, 3));
    /// ```
    pub fn holds<T: PartialOrd>(self, lhs: T, rhs: T) -> bool {
        match self {
            Cmp::Eq => lhs == rhs,
            Cmp::Ne => lhs != rhs,
            Cmp::Gt => lhs > rhs,
            Cmp::Le => lhs <= rhs,
            Cmp::Lt => lhs < rhs,
            Cmp::Ge => lhs >= rhs,
        }
    }
}

/// How a signal word is updated by a put-with-signal or a signal op:
/// NVSHMEM's `nvshmemx_signal_op_t` (`device_host_transport/nvshmem_common_transport.h`).
///
/// ```
/// use nvshmem_types::SignalOp;
/// assert_eq!(SignalOp::Set.to_c(), 9);
/// assert_eq!(SignalOp::Add.to_c(), 10);
/// ```
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignalOp {
    /// `NVSHMEM_SIGNAL_SET`: the signal becomes the value.
    Set = 9,
    /// `NVSHMEM_SIGNAL_ADD`: the value is added to the signal.
    Add = 10,
}

impl SignalOp {
    /// The `int` NVSHMEM takes.
    ///
    /// ```
    /// assert_eq!(nvshmem_types::SignalOp::Add.to_c(), 10);
    /// ```
    pub const fn to_c(self) -> i32 {
        self as i32
    }
}
