//! The kernel's multi-PE test: `cargo test` runs it on 1 and 2 PEs through
//! the harness, which starts the PEs itself. Without a GPU it prints SKIPPED
//! (with `NVSHMEM_RS_REQUIRE_GPU=1`, as on a GPU runner, that is a failure).

use nvshmem_host::harness::{self, GpuTest, TestPe, TestResult, check_eq};

nvshmem_host::include_kernels!(my_kernels);

fn scale_to_next(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (me, n_pes) = (nv.my_pe(), nv.n_pes());
    let n = 1000;
    let input: Vec<f32> = (0..n).map(|i| (me.index() + 1) as f32 * i as f32).collect();
    let src = nv.alloc_from(&input)?;
    // NaN until the kernel writes it: a kernel that does nothing fails.
    let dest = pe.poisoned::<f32>(n)?;
    let staging = nv.alloc_zeroed::<f32>(n)?;
    let signal = nv.alloc_zeroed::<u64>(1)?;
    let k = my_kernels::Kernels::load_in(nv, pe.ptx_dir())?;
    // SAFETY: n floats per buffer and one zeroed u64 signal, one block per PE.
    unsafe {
        my_kernels::scale_to_next(&k, nv.stream(), 1, 128, &dest, &staging, &src, n as u64, 2.0, &signal)?
    };
    nv.barrier_all_on_stream(nv.stream())?;
    let prev = me.ring_prev(n_pes).index();
    let want: Vec<f32> = (0..n).map(|i| (prev + 1) as f32 * i as f32 * 2.0).collect();
    check_eq("scale_to_next", &dest.to_vec(nv.stream())?, &want)
}

fn main() {
    harness::main(
        my_kernels::DIR,
        &[GpuTest::new("scale_to_next", scale_to_next).pes(&[1, 2])],
    );
}
