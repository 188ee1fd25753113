//! TMA tensor maps for kernels that use `nvshmem_device::tma`: encoded on the
//! host with the driver's `cuTensorMapEncodeTiled` and copied to device
//! memory, where kernels read them through a `*const TensorMap` parameter.
//!
//! (CUDA C++ passes a `CUtensorMap` by value as a `__grid_constant__`
//! parameter; rustc cannot, see `nvshmem_device::tma`.)
//!
//! ```no_run
//! use nvshmem_host::tensor_map::{self, TmaSwizzle};
//! use half::bf16;
//! # let nv = nvshmem_host::Nvshmem::init()?;
//! let (rows, cols) = (4096u64, 4096u64);
//! let a = nv.alloc_zeroed::<bf16>((rows * cols) as usize)?;
//! // Boxes of 64 columns × 128 rows, 128-byte swizzle (what a wgmma tile reads).
//! let map = tensor_map::encode_2d(a.device_ptr(), rows, cols, cols * 2, (64, 128), TmaSwizzle::B128)?;
//! let on_device = nv.alloc_from(&[map])?; // pass `on_device.device_ptr()` to the kernel
//! # Ok::<(), nvshmem_host::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::runtime::memory::DevicePtr;
use cudarc::driver::sys;
pub use nvshmem_types::TensorMap;

/// The shared-memory swizzle a TMA copy applies (`CU_TENSOR_MAP_SWIZZLE_*`).
/// A swizzled box's inner dimension must span at most the swizzle width
/// (128 bytes for [`B128`](TmaSwizzle::B128)), and its shared-memory
/// destination must be aligned to 8 × that width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaSwizzle {
    /// None.
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle: what `wgmma` K-major tiles of 64 16-bit elements use.
    B128,
}

/// An element type TMA can copy (`CU_TENSOR_MAP_DATA_TYPE_*`).
pub trait TmaElement: bytemuck::Pod {
    /// The driver's data type.
    const DATA_TYPE: sys::CUtensorMapDataType;
}

macro_rules! tma_elements {
    ($($t:ty => $v:ident),* $(,)?) => {$(
        impl TmaElement for $t {
            const DATA_TYPE: sys::CUtensorMapDataType = sys::CUtensorMapDataType::$v;
        }
    )*};
}
tma_elements!(
    u8 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
    u16 => CU_TENSOR_MAP_DATA_TYPE_UINT16,
    u32 => CU_TENSOR_MAP_DATA_TYPE_UINT32,
    i32 => CU_TENSOR_MAP_DATA_TYPE_INT32,
    u64 => CU_TENSOR_MAP_DATA_TYPE_UINT64,
    i64 => CU_TENSOR_MAP_DATA_TYPE_INT64,
    half::f16 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    half::bf16 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    f32 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    f64 => CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
);

/// Checks what `cuTensorMapEncodeTiled` requires of a 2-D map, with a
/// message naming the argument. Works without a GPU.
///
/// ```
/// use nvshmem_host::tensor_map::{check_2d, TmaSwizzle};
/// assert!(check_2d(2, 0x1000, 128, 256, 512, (64, 128), TmaSwizzle::B128).is_ok());
/// assert!(check_2d(2, 0x1000, 128, 256, 512, (128, 128), TmaSwizzle::B128).is_err()); // 256-byte rows
/// assert!(check_2d(2, 0x1008, 128, 256, 512, (64, 128), TmaSwizzle::B128).is_err()); // misaligned
/// ```
pub fn check_2d(
    elem_bytes: u64,
    addr: u64,
    rows: u64,
    cols: u64,
    row_pitch_bytes: u64,
    (box_cols, box_rows): (u32, u32),
    swizzle: TmaSwizzle,
) -> Result<()> {
    let bad = |reason: String| {
        Err(Error::InvalidArgument {
            reason: format!("tensor map: {reason}"),
        })
    };
    if !addr.is_multiple_of(16) {
        return bad(format!("the base address {addr:#x} is not 16-byte aligned"));
    }
    if rows == 0 || cols == 0 || rows > 1 << 32 || cols > 1 << 32 {
        return bad(format!(
            "{rows} × {cols} elements: each dimension must be in 1..=2^32"
        ));
    }
    if !row_pitch_bytes.is_multiple_of(16)
        || row_pitch_bytes < cols * elem_bytes
        || row_pitch_bytes >= 1 << 40
    {
        return bad(format!(
            "the row pitch {row_pitch_bytes} must be a multiple of 16 bytes, at least a row ({} bytes), below 2^40",
            cols * elem_bytes
        ));
    }
    if !(1..=256).contains(&box_cols) || !(1..=256).contains(&box_rows) {
        return bad(format!(
            "box {box_cols} × {box_rows}: each side must be in 1..=256"
        ));
    }
    let inner = box_cols as u64 * elem_bytes;
    if !inner.is_multiple_of(16) {
        return bad(format!(
            "the box's rows ({inner} bytes) must be a multiple of 16 bytes"
        ));
    }
    let span = match swizzle {
        TmaSwizzle::None => u64::MAX,
        TmaSwizzle::B32 => 32,
        TmaSwizzle::B64 => 64,
        TmaSwizzle::B128 => 128,
    };
    if inner > span {
        return bad(format!(
            "the box's rows ({inner} bytes) exceed the {span}-byte swizzle"
        ));
    }
    Ok(())
}

/// A 2-D tiled tensor map over the row-major matrix of `rows × cols`
/// elements at `base` (rows `row_pitch_bytes` apart), copied in boxes of
/// `box_cols × box_rows` with `swizzle`; out-of-bounds elements read as zero.
/// Coordinates in the kernel are `(column, row)` of the box's first element.
/// Checked first with [`check_2d`].
pub fn encode_2d<T: TmaElement>(
    base: DevicePtr<T>,
    rows: u64,
    cols: u64,
    row_pitch_bytes: u64,
    box_dims: (u32, u32),
    swizzle: TmaSwizzle,
) -> Result<TensorMap> {
    let elem = std::mem::size_of::<T>() as u64;
    check_2d(
        elem,
        base.addr(),
        rows,
        cols,
        row_pitch_bytes,
        box_dims,
        swizzle,
    )?;
    let global_dim: [u64; 2] = [cols, rows];
    // The innermost stride is implied (the element size).
    let global_strides: [u64; 1] = [row_pitch_bytes];
    let box_dim: [u32; 2] = [box_dims.0, box_dims.1];
    let element_strides: [u32; 2] = [1, 1];
    let swizzle = match swizzle {
        TmaSwizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        TmaSwizzle::B32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        TmaSwizzle::B64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        TmaSwizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let mut raw = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: every pointer is to a live array of the rank's length; the
    // driver only encodes (no device access).
    unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut raw,
            T::DATA_TYPE,
            2,
            base.addr() as *mut std::ffi::c_void,
            global_dim.as_ptr(),
            global_strides.as_ptr(),
            box_dim.as_ptr(),
            element_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()
    .map_err(|source| Error::Driver {
        call: "cuTensorMapEncodeTiled",
        source,
    })?;
    Ok(TensorMap { opaque: raw.opaque })
}

/// The byte offset at which a TMA copy with 128-byte swizzle puts element
/// (`row`, `col`) of a box whose rows are 128 bytes (`elem_bytes`-byte
/// elements): 16-byte chunk `col·elem_bytes / 16` of row `row` goes to chunk
/// `chunk ^ (row % 8)`. For checking swizzled tiles on the host.
///
/// ```
/// use nvshmem_host::tensor_map::swizzle128_offset;
/// assert_eq!(swizzle128_offset(0, 0, 2), 0);
/// assert_eq!(swizzle128_offset(1, 0, 2), 128 + 16); // row 1: chunk 0 → 1
/// assert_eq!(swizzle128_offset(1, 8, 2), 128);      // chunk 1 → 0
/// ```
pub fn swizzle128_offset(row: usize, col: usize, elem_bytes: usize) -> usize {
    let byte = col * elem_bytes;
    row * 128 + (((byte / 16) ^ (row % 8)) * 16) + byte % 16
}
