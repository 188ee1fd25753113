//! cuBLAS through cudarc, loaded at run time: the reference GEMM.

use crate::Res;
use cudarc::cublas::{result as blas, sys as blas_sys};
use nvshmem_host::Nvshmem;

/// A cuBLAS handle on the PE's stream (destroyed on drop).
pub struct Cublas(blas_sys::cublasHandle_t);

impl Cublas {
    /// A handle on `nv`'s stream, or `None` when libcublas is not on the library path.
    pub fn new(nv: &Nvshmem) -> Res<Option<Cublas>> {
        // SAFETY: only probes for the library.
        if !unsafe { blas_sys::is_culib_present() } {
            return Ok(None);
        }
        let h = blas::create_handle()?;
        // SAFETY: a live handle and this PE's stream.
        unsafe { blas::set_stream(h, nv.stream().cu_stream() as _)? };
        Ok(Some(Cublas(h)))
    }

    /// `C (m × n, row-major) = A (m × k) · Bᵀ (B: n × k)`, bf16 in, `c_f32`
    /// picks f32 or bf16 out, f32 compute. Column-major cuBLAS sees
    /// `Cᵀ = B · Aᵀ`: `op(B) = T`, `op(A) = N`.
    ///
    /// # Safety
    /// The pointers hold the sizes above.
    pub unsafe fn gemm(
        &self,
        a: u64,
        b: u64,
        c: u64,
        (m, n, k): (usize, usize, usize),
        c_f32: bool,
    ) -> Res<()> {
        let (alpha, beta) = (1f32, 0f32);
        let bf = blas_sys::cudaDataType::CUDA_R_16BF;
        let ct = if c_f32 {
            blas_sys::cudaDataType::CUDA_R_32F
        } else {
            bf
        };
        // SAFETY: the caller's sizes; host scalars.
        unsafe {
            blas::gemm_ex(
                self.0,
                blas_sys::cublasOperation_t::CUBLAS_OP_T,
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                n as i32,
                m as i32,
                k as i32,
                (&alpha as *const f32).cast(),
                b as *const _,
                bf,
                k as i32,
                a as *const _,
                bf,
                k as i32,
                (&beta as *const f32).cast(),
                c as *mut _,
                ct,
                n as i32,
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )?
        };
        Ok(())
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { blas::destroy_handle(self.0) };
    }
}
