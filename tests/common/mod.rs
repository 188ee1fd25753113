//! What the GPU test binaries (`tests/*.rs`, `harness = false`) share:
//! their `main`, as a list of test functions by PE counts.

/// One PE.
#[allow(dead_code)]
pub const ONE: &[u32] = &[1];
/// 1, 2 and 4 PEs (4 on one GPU need CUDA MPS).
#[allow(dead_code)]
pub const ALL: &[u32] = &[1, 2, 4];

/// The test binary's `main`: `nvshmem_host::harness::main` over the listed
/// test functions, each group run on the PE counts before its `=>` (and with
/// the environment after `with`, if any), in the order listed.
///
/// ```text
/// gpu_main! {
///     ALL => put_block, get_nbi;
///     &[1], with &[("NVSHMEM_DISABLE_NVLS", "1")] => address_queries;
/// }
/// ```
macro_rules! gpu_main {
    (@env) => { &[] };
    (@env $env:expr) => { $env };
    ($($pes:expr $(, with $env:expr)? => $($test:ident),+ ;)+) => {
        fn main() {
            let mut tests = Vec::new();
            $(
                let env: &'static [(&'static str, &'static str)] = gpu_main!(@env $($env)?);
                $(
                    tests.push(
                        nvshmem_host::harness::GpuTest::new(stringify!($test), $test)
                            .pes($pes)
                            .env(env),
                    );
                )+
            )+
            nvshmem_host::harness::main(env!("NVSHMEM_RS_PTX_DIR"), &tests);
        }
    };
}
