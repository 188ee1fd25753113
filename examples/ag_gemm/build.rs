//! Builds this example's kernel crates into `$OUT_DIR/ptx`: `kernel/` (f32)
//! and `kernel_tc/` (bf16 tensor cores; for `sm_90a` when the arch is `sm_90`).
fn main() {
    example_build::build(&["kernel"], &["kernel_tc"]);
}
