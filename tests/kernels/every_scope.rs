// The coverage kernel crates' one-call-per-scope macro, `include!`d by both
// (`tests/kernels/coverage`, `tests/kernels/coverage_collectives`).

/// `f(args)`, `f_warp(args)` and `f_block(args)` for each row `f(args)`.
macro_rules! every_scope {
    ($($f:ident($($a:expr),*);)*) => { pastey::paste! {$(
        $f($($a),*);
        [<$f _warp>]($($a),*);
        [<$f _block>]($($a),*);
    )*} };
}
