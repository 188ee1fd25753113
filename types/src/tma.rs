//! The TMA tensor map, shared by kernels (`nvshmem_device::tma`) and hosts
//! (`nvshmem_host::tensor_map`).

/// CUDA's `CUtensorMap`: 128 opaque bytes that describe a tiled tensor for
/// the Tensor Memory Accelerator, encoded on the host by
/// `cuTensorMapEncodeTiled` and read by the GPU's TMA unit. TMA needs 64-byte
/// alignment; CUDA 13's header declares 128, and so does this type.
///
/// Kernels take it as `*const TensorMap` into global memory (stock rustc
/// cannot pass it as CUDA's `__grid_constant__` parameter; see
/// `nvshmem_device::tma`).
///
/// ```
/// assert_eq!(core::mem::size_of::<nvshmem_types::TensorMap>(), 128);
/// assert_eq!(core::mem::align_of::<nvshmem_types::TensorMap>(), 128);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(128))]
pub struct TensorMap {
    /// The encoded map.
    pub opaque: [u64; 16],
}
