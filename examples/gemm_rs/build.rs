//! Builds this example's kernel crate (`kernel/`; for `sm_90a` when the arch
//! is `sm_90`) into `$OUT_DIR/ptx`.
fn main() {
    example_build::build(&[], &["kernel"]);
}
