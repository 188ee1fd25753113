//! Builds this example's kernel crate (`kernel/`) into `$OUT_DIR/ptx`.
fn main() {
    example_build::build(&["kernel"], &[]);
}
