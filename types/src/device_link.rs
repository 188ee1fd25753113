//! How `ptxas` turns a kernel crate's PTX into its cubin.

use core::fmt;
use core::str::FromStr;

/// How `ptxas` turns the PTX into the cubin.
///
/// Whole-program `ptxas` inlines every function call into its kernel. That
/// gives the fastest kernels for small call graphs, but its time grows faster
/// than the inlined size: NVSHMEM 3.8's transport code (IBGDA, GPUNetIO and
/// proxy paths, kept out of line in its bitcode) makes a kernel that calls many
/// operations hundreds of thousands of PTX lines once inlined (measured on 2
/// cores: one kernel calling every RMA function, 315 000 lines inlined, 3 min
/// of ptxas and 7.8 GB; the 3.8 coverage crate, 5.7 million, over 21 min).
/// It also gives a kernel the registers of everything it calls: 3.8's ring
/// example kernel takes 150 registers whole-program, 38 with 3.4.5.
///
/// Separate compilation (`ptxas -c`, then `nvlink`, as `nvcc -rdc` does)
/// compiles each function once (that crate: 42 s), at the price of calls
/// between functions and register counts that cover the whole call graph.
/// When some kernel reaches more than the builder's
/// `AUTO_SEPARATE_TRANSPORT_ABOVE_LINES` of NVSHMEM's transport functions
/// (`nvshmemi_transfer_*` and the proxy, IBGDA and GPUNetIO functions; 3.8's
/// are large), they go in an object of their own compiled at most 32
/// registers, as NVSHMEM compiles them into `libnvshmem_device.a` so that
/// calling them costs a kernel no occupancy: the 3.8 ring kernel then takes
/// 36 registers. Their spills (they have some at 32 registers, in CUDA C++
/// too) are not in the kernels' figures, which cover the kernels' own code.
/// Small ones (3.4.5's) stay in the kernels' object, where they cost fewer
/// registers than as calls between objects.
///
/// The builder's manifest records the mode a cubin was made with (never
/// `Auto`): the host JIT-compiles a separately compiled module's PTX through
/// the driver's linker.
///
/// ```
/// use nvshmem_types::DeviceLink;
/// assert_eq!("whole-program".parse::<DeviceLink>(), Ok(DeviceLink::WholeProgram));
/// assert_eq!(DeviceLink::Separate.to_string(), "separate");
/// assert!("inline".parse::<DeviceLink>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceLink {
    /// [`Separate`](Self::Separate) when `nvlink` is found and some kernel
    /// would exceed the builder's `AUTO_SEPARATE_ABOVE_LINES` with every call
    /// inlined, or reaches more than its `AUTO_SEPARATE_TRANSPORT_ABOVE_LINES`
    /// of NVSHMEM's transport code (with NVSHMEM 3.8, any kernel that reaches
    /// it); else [`WholeProgram`](Self::WholeProgram).
    #[default]
    Auto,
    /// `ptxas` on the whole module: every call inlined.
    WholeProgram,
    /// `ptxas -c` on the module (large NVSHMEM transport functions on their
    /// own, at most 32 registers), then `nvlink`: every function compiled once.
    Separate,
}

impl DeviceLink {
    /// Every mode, in the order the command line lists them.
    pub const ALL: [DeviceLink; 3] = [
        DeviceLink::Auto,
        DeviceLink::WholeProgram,
        DeviceLink::Separate,
    ];

    /// The name used in manifests, `NVSHMEM_RS_DEVICE_LINK` and the command line.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeviceLink::Auto => "auto",
            DeviceLink::WholeProgram => "whole-program",
            DeviceLink::Separate => "separate",
        }
    }
}

impl fmt::Display for DeviceLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`DeviceLink`] mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseDeviceLinkError;

impl fmt::Display for ParseDeviceLinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no device link mode: use auto, whole-program or separate")
    }
}

impl core::error::Error for ParseDeviceLinkError {}

impl FromStr for DeviceLink {
    type Err = ParseDeviceLinkError;

    /// `auto`, `whole-program` or `separate`.
    fn from_str(s: &str) -> Result<Self, ParseDeviceLinkError> {
        DeviceLink::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or(ParseDeviceLinkError)
    }
}
