//! Kernel arguments known only at run time, for hosts in dynamic languages
//! (the Python package, `python/`): what each parameter accepts, from its
//! type in the builder's manifest, and the checks that turn a value into the
//! bytes of the launch. One implementation, so every host refuses the same
//! arguments with the same messages.
//!
//! A [`Signature`] is made once per kernel; [`Signature::encode`] checks a
//! launch's [`Arg`]s (count, type, element type, contiguity, device,
//! symmetric-heap membership, integer range, PE number) and writes them into
//! an [`ArgBuffer`]. Nothing here needs a GPU: the GPU's facts come from an
//! [`ArgContext`].
//!
//! ```
//! use nvshmem_host::dynamic::{Arg, ArgContext, Location, Scalar, Signature, TensorArg};
//! use nvshmem_types::manifest::{KernelInfo, ParamInfo};
//! let param = |name: &str, ty: &str, size| ParamInfo {
//!     name: name.into(), rust_type: ty.into(), c_type: String::new(), size, align: size,
//! };
//! let info = KernelInfo::new("scale", vec![param("x", "SymPtr<f32>", 8), param("n", "u32", 4)], false);
//! let sig = Signature::new(&info);
//! struct Gpu0;
//! impl ArgContext for Gpu0 {
//!     fn device(&self) -> i32 { 0 }
//!     fn n_pes(&self) -> Option<u32> { Some(2) }
//!     fn is_symmetric(&self, ptr: u64, bytes: u64) -> bool { ptr >= 0x1000 && ptr + bytes <= 0x9000 }
//! }
//! let x = TensorArg { ptr: 0x1000, bytes: 64, dtype: Ok(Scalar::F32), contiguous: true, location: Location::Cuda(0) };
//! assert!(sig.encode(&[Arg::Tensor(x.clone()), Arg::Int(16)], &Gpu0).is_ok());
//! let err = sig.encode(&[Arg::Tensor(x), Arg::Int(-1)], &Gpu0).unwrap_err();
//! assert!(err.to_string().contains("`n: u32`"));
//! ```

pub use crate::error::Refusal;
use crate::error::{Error, Result};
use nvshmem_types::Team;
use nvshmem_types::manifest::{KernelInfo, ParamInfo};
pub use nvshmem_types::manifest::{ParamKind, Scalar, ScalarClass};
use std::ffi::c_void;

/// What a caller passes for a parameter of `kind`, in words.
fn wants(kind: ParamKind) -> String {
    let elems = |e: Option<Scalar>| match e {
        Some(s) => format!("a contiguous {} tensor", s.torch_name()),
        None => "a contiguous tensor".into(),
    };
    match kind {
        ParamKind::Symmetric(e) => {
            format!(
                "{} in NVSHMEM's symmetric heap (torch: symm_mem.empty)",
                elems(e)
            )
        }
        ParamKind::Device(e) => format!("{} on this process's GPU", elems(e)),
        ParamKind::Scalar(s) if s.class() == ScalarClass::Float => "a float".into(),
        ParamKind::Scalar(s) if s.class() == ScalarClass::Bool => "a bool".into(),
        ParamKind::Scalar(s) => format!(
            "an int in {}..={}",
            s.int_range().unwrap().0,
            s.int_range().unwrap().1
        ),
        ParamKind::Pe => "a PE number (int)".into(),
        ParamKind::Team => "an nvshmem_rs.Team (such as Team.WORLD)".into(),
        ParamKind::Unsupported => "nothing a dynamic host can pass".into(),
    }
}

/// Whether a pointer to `given` elements may stand for a pointer to
/// `expected` ones: unless their sizes differ, and neither is a byte type
/// (`u8`, `i8`, `bool`, which take anything), nor a type that is not a
/// [`Scalar`] (a struct, `c_void`: its size is not known here). `bf16` for
/// `u16`, `f32` for `u32` fit: kernels that move bits take them so.
///
/// ```
/// use nvshmem_host::dynamic::{Scalar, elements_fit};
/// assert!(elements_fit(Some(Scalar::U16), Some(Scalar::BF16)));
/// assert!(elements_fit(Some(Scalar::F32), Some(Scalar::U8)));
/// assert!(elements_fit(None, Some(Scalar::F64)));
/// assert!(!elements_fit(Some(Scalar::F32), Some(Scalar::U64)));
/// ```
pub fn elements_fit(expected: Option<Scalar>, given: Option<Scalar>) -> bool {
    match (expected, given) {
        (Some(e), Some(g)) => e.size() == g.size() || e.size() == 1 || g.size() == 1,
        _ => true,
    }
}

/// Why an argument of Rust type `given` (as `std::any::type_name` writes
/// it) certainly does not fit a parameter of Rust type `expected` (as the
/// manifest records it), with the fix; `None` when it may fit. Certainly
/// wrong: a number where the kernel takes a pointer, or the reverse; a
/// float for an integer, or the reverse; a pointer to elements of another
/// size (see [`elements_fit`]). A `DevicePtr` for a `SymPtr` (or the
/// reverse) is not refused: a symmetric buffer's two addresses are the
/// same, so either may be right. Types neither side can read (structs,
/// arrays) are left to the size check.
///
/// ```
/// use nvshmem_host::dynamic::type_mismatch;
/// assert!(type_mismatch("*const u16", "nvshmem_host::memory::DevicePtr<half::bfloat::bf16>").is_none());
/// assert!(type_mismatch("SymPtr<f32>", "nvshmem_types::sym::SymPtr<u64>").is_some());
/// assert!(type_mismatch("f32", "i32").is_some());
/// assert!(type_mismatch("*mut f32", "u64").is_some());
/// ```
pub fn type_mismatch(expected: &str, given: &str) -> Option<String> {
    let (want, got) = (ParamKind::parse(expected), ParamKind::parse(given));
    // Shortened only when a message is written: this runs on every launch.
    let given = Short(given);
    let number = |float: bool| if float { "a float" } else { "an integer" };
    let reason = match (
        want.pointee(),
        got.pointee(),
        want.value_is_float(),
        got.value_is_float(),
    ) {
        (Some(_), None, _, Some(_)) => format!(
            "it takes a pointer, but a `{given}` (a number) was given; pass the buffer \
             (`&buf`, `buf.device_ptr()`, `buf.sym_ptr()`)"
        ),
        (None, Some(_), Some(float), _) => format!(
            "it takes {} by value, but a `{given}` (a pointer) was given; pass a `{expected}`",
            number(float)
        ),
        (_, _, Some(want), Some(got)) if want != got => format!(
            "it takes {}, but a `{given}` ({}) was given; pass a `{expected}` \
             (`x as {expected}`)",
            number(want),
            number(got)
        ),
        (Some(e), Some(g), _, _) if !elements_fit(e, g) => {
            let (e, g) = (e.expect("fits otherwise"), g.expect("fits otherwise"));
            format!(
                "it points to {} ({} bytes each), but a `{given}` points to {} ({} bytes); \
                 pass a buffer of {}",
                e.name(),
                e.size(),
                g.name(),
                g.size(),
                e.name()
            )
        }
        _ => return None,
    };
    Some(reason)
}

/// A type name that displays as [`short_type`] does.
struct Short<'a>(&'a str);

impl std::fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&short_type(self.0))
    }
}

/// `ty` with every path shortened to its last segment:
/// `nvshmem_types::sym::SymPtr<half::bfloat::bf16>` is `SymPtr<bf16>`.
fn short_type(ty: &str) -> String {
    let mut out = String::new();
    let mut path = String::new();
    for c in ty.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            path.push(c);
        } else {
            out.push_str(path.rsplit("::").next().unwrap_or(""));
            path.clear();
            out.push(c);
        }
    }
    out.pop();
    out
}

/// Where a tensor's memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// On the CUDA device with this ordinal.
    Cuda(i32),
    /// In host memory.
    Cpu,
    /// Not known (an `__cuda_array_interface__` object without a device).
    Unknown,
}

/// A tensor argument, as the caller describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorArg {
    /// Its first element's device address.
    pub ptr: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its element type, or the caller's name for one that is not a [`Scalar`].
    pub dtype: std::result::Result<Scalar, String>,
    /// Whether its elements are contiguous, in row-major order.
    pub contiguous: bool,
    /// Where it is.
    pub location: Location,
}

/// One launch argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A tensor (for pointer parameters).
    Tensor(TensorArg),
    /// An integer; the caller's integers that fit no `i128` are out of every range anyway.
    Int(i128),
    /// A float.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A team handle.
    Team(Team),
    /// Something else; the caller's name for its type.
    Other(String),
}

impl Arg {
    /// Its type in words, for messages.
    fn describe(&self) -> String {
        match self {
            Arg::Tensor(t) => format!(
                "a tensor of {}",
                t.dtype
                    .as_ref()
                    .map_or_else(|s| s.clone(), |d| d.torch_name().to_string())
            ),
            Arg::Int(v) => format!("the int {v}"),
            Arg::Float(v) => format!("the float {v:?}"),
            // Dynamic hosts are Python's: its spelling.
            Arg::Bool(v) => format!("the bool {}", if *v { "True" } else { "False" }),
            Arg::Team(_) => "a Team".into(),
            Arg::Other(t) => format!("{} {t}", article(t)),
        }
    }
}

/// `a` or `an`, for `word`.
fn article(word: &str) -> &'static str {
    let mut chars = word.chars();
    match (chars.next(), chars.next()) {
        // A type's letter is read by its name: "an f32", "an i8", "a u32",
        // "an ndarray"; a `u` that sounds "you": "a uint8", "a UUID".
        (Some('f' | 'i'), Some(d)) if d.is_ascii_digit() => "an",
        (Some('n'), Some('d')) => "an",
        (Some('u' | 'U'), Some(d)) if d.is_ascii_digit() || matches!(d, 'i' | 'U' | 's') => "a",
        (Some('a' | 'e' | 'i' | 'o' | 'u' | 'A' | 'E' | 'I' | 'O' | 'U'), _) => "an",
        _ => "a",
    }
}

/// What the checks need to know about the process that launches.
pub trait ArgContext {
    /// This process's CUDA device ordinal.
    fn device(&self) -> i32;
    /// The PE count, when known.
    fn n_pes(&self) -> Option<u32>;
    /// Whether `[ptr, ptr + bytes)` lies inside NVSHMEM's symmetric heap.
    fn is_symmetric(&self, ptr: u64, bytes: u64) -> bool;
    /// Where `ptr` points, for a tensor whose [`Location`] is
    /// [`Unknown`](Location::Unknown): `None` when this context cannot tell
    /// (checks without a GPU), and then the tensor is taken as device memory.
    fn location_of(&self, ptr: u64) -> Option<Location> {
        let _ = ptr;
        None
    }
    /// The fix a refusal names when a `SymPtr` parameter's tensor is not in
    /// [the heap](ArgContext::is_symmetric). Contexts whose heap is not
    /// NVSHMEM's own (checks without a GPU) say how to give theirs.
    fn not_symmetric_fix(&self) -> String {
        SYMMETRIC_ALLOCATION_FIX.into()
    }
}

/// How a PyTorch program puts a tensor in NVSHMEM's symmetric heap: the
/// default [`ArgContext::not_symmetric_fix`].
pub const SYMMETRIC_ALLOCATION_FIX: &str = "allocate it with torch.distributed._symmetric_memory.empty(...) \
     after symm_mem.set_backend(\"NVSHMEM\"), and rendezvous it";

/// A kernel's parameters as a dynamic host checks them: built once per kernel.
#[derive(Clone, Debug)]
pub struct Signature {
    kernel: String,
    params: Vec<(ParamKind, ParamInfo)>,
}

/// Bytes of one argument slot: every accepted parameter is at most 8 bytes.
const SLOT: usize = 8;

/// The encoded arguments of one launch: a value slot per parameter, and the
/// pointers to them that `cuLaunchKernel` takes.
#[derive(Debug, Default)]
pub struct ArgBuffer {
    slots: Vec<u64>,
    ptrs: Vec<*mut c_void>,
}

impl ArgBuffer {
    /// The parameter pointers, as `cuLaunchKernel`'s `kernelParams`. They
    /// point into this buffer: valid while it is neither moved nor dropped.
    pub fn params(&mut self) -> &mut [*mut c_void] {
        self.ptrs.clear();
        let base = self.slots.as_mut_ptr();
        // SAFETY: every index is below `slots.len()`.
        self.ptrs
            .extend((0..self.slots.len()).map(|i| unsafe { base.add(i) }.cast::<c_void>()));
        &mut self.ptrs
    }

    /// The slot values, for tests: each argument's bytes, little-endian, zero-padded.
    pub fn slots(&self) -> &[u64] {
        &self.slots
    }
}

impl Signature {
    /// The signature of `info`'s kernel.
    pub fn new(info: &KernelInfo) -> Signature {
        Signature {
            kernel: info.name.clone(),
            params: info.params.iter().map(|p| (p.kind(), p.clone())).collect(),
        }
    }

    /// The kernel's name.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }

    /// Each parameter's kind and manifest entry, in order.
    pub fn params(&self) -> &[(ParamKind, ParamInfo)] {
        &self.params
    }

    /// The parameters as `name: Type`, for messages and help.
    pub fn describe(&self) -> String {
        let list: Vec<String> = self.params.iter().map(|(_, p)| describe(p)).collect();
        format!("{}({})", self.kernel, list.join(", "))
    }

    /// Checks `args` against the parameters and encodes them; an
    /// [`Error::ArgumentRejected`] names the kernel, the parameter and the fix.
    pub fn encode(&self, args: &[Arg], ctx: &dyn ArgContext) -> Result<ArgBuffer> {
        let mut buf = ArgBuffer {
            slots: Vec::with_capacity(self.params.len()),
            ptrs: Vec::new(),
        };
        self.encode_into(args, ctx, &mut buf)?;
        Ok(buf)
    }

    /// [`Signature::encode`] into a buffer that is reused between launches.
    pub fn encode_into(
        &self,
        args: &[Arg],
        ctx: &dyn ArgContext,
        buf: &mut ArgBuffer,
    ) -> Result<()> {
        if args.len() != self.params.len() {
            return Err(Error::ArgumentRejected {
                kernel: self.kernel.clone(),
                param: format!("{} argument(s)", self.params.len()),
                refusal: Refusal::Type,
                reason: format!("{} were given", args.len()),
                fix: format!("call it as {}", self.describe()),
            });
        }
        buf.slots.clear();
        for (i, ((kind, param), arg)) in self.params.iter().zip(args).enumerate() {
            let slot =
                self.encode_one(*kind, param, arg, ctx)
                    .map_err(|(refusal, reason, fix)| Error::ArgumentRejected {
                        kernel: self.kernel.clone(),
                        param: format!("argument {i} `{}`", describe(param)),
                        refusal,
                        reason,
                        fix,
                    })?;
            buf.slots.push(slot);
        }
        Ok(())
    }

    /// One argument's slot, or why it is refused and the fix.
    fn encode_one(
        &self,
        kind: ParamKind,
        param: &ParamInfo,
        arg: &Arg,
        ctx: &dyn ArgContext,
    ) -> std::result::Result<u64, (Refusal, String, String)> {
        let wrong_type = || {
            (
                Refusal::Type,
                format!("it takes {}, but {} was given", wants(kind), arg.describe()),
                format!("pass {}", wants(kind)),
            )
        };
        if kind != ParamKind::Unsupported && param.size as usize > SLOT {
            return Err((
                Refusal::Type,
                format!("the manifest says it is {} bytes", param.size),
                "rebuild the kernels with this nvshmem_rs's builder".into(),
            ));
        }
        match (kind, arg) {
            (ParamKind::Symmetric(elem) | ParamKind::Device(elem), Arg::Tensor(t)) => {
                // A tensor's dtype must be the parameter's exactly: unlike a
                // Rust launch, Python has no typed binding to catch an i32
                // tensor for f32, so the fix names `view` for the bits.
                if let Some(want) = elem
                    && t.dtype.as_ref() != Ok(&want)
                {
                    let got = t.dtype.as_ref().map_or_else(|s| s.clone(), |d| d.torch_name().into());
                    let to = want.torch_name();
                    // A `.to()` copy of a symmetric tensor is not in the heap.
                    let convert = if matches!(kind, ParamKind::Symmetric(_)) {
                        format!("symm_mem.empty(..., dtype=torch.{to}) allocates one in the symmetric heap")
                    } else {
                        format!("tensor.to(torch.{to}) converts its values")
                    };
                    let fix = match t.dtype.as_ref() {
                        Ok(d) if d.size() == want.size() => {
                            format!("pass a torch.{to} tensor: tensor.view(torch.{to}) keeps its bits, {convert}")
                        }
                        _ => format!("pass a torch.{to} tensor ({convert})"),
                    };
                    return Err((
                        Refusal::Type,
                        format!("its elements are {}, but the tensor's dtype is {got}", want.name()),
                        fix,
                    ));
                }
                if !t.contiguous {
                    return Err((
                        Refusal::Value,
                        "the tensor is not contiguous".into(),
                        "pass tensor.contiguous() (the kernel reads elements in row-major order)".into(),
                    ));
                }
                let location = match t.location {
                    // An empty array's address is often 0: nothing to look up.
                    Location::Unknown if t.bytes == 0 => Location::Cuda(ctx.device()),
                    Location::Unknown => ctx.location_of(t.ptr).unwrap_or(Location::Cuda(ctx.device())),
                    known => known,
                };
                match location {
                    Location::Unknown => {
                        return Err((
                            Refusal::Value,
                            format!("its address {:#x} is not memory CUDA allocated or registered", t.ptr),
                            "pass a tensor of this GPU's memory".into(),
                        ));
                    }
                    Location::Cuda(d) if d != ctx.device() => {
                        return Err((
                            Refusal::Value,
                            format!("the tensor is on cuda:{d}, but this process's GPU is cuda:{}", ctx.device()),
                            format!("move it with tensor.to('cuda:{}')", ctx.device()),
                        ));
                    }
                    Location::Cpu => {
                        return Err((
                            Refusal::Value,
                            "the tensor is in host memory".into(),
                            format!("move it with tensor.to('cuda:{}')", ctx.device()),
                        ));
                    }
                    _ => {}
                }
                if matches!(kind, ParamKind::Symmetric(_)) && !ctx.is_symmetric(t.ptr, t.bytes.max(1)) {
                    return Err((
                        Refusal::Value,
                        format!("the tensor (address {:#x}, {} bytes) is not inside NVSHMEM's symmetric heap", t.ptr, t.bytes),
                        ctx.not_symmetric_fix(),
                    ));
                }
                Ok(t.ptr)
            }
            (ParamKind::Scalar(s), _) => encode_scalar(s, arg).ok_or_else(|| match (s.class(), arg) {
                (ScalarClass::Signed | ScalarClass::Unsigned, Arg::Int(v)) => {
                    let (lo, hi) = s.int_range().unwrap();
                    (
                        Refusal::Value,
                        format!("{v} does not fit in {} {} ({lo}..={hi})", article(s.name()), s.name()),
                        format!("pass an int in {lo}..={hi}"),
                    )
                }
                (ScalarClass::Float, Arg::Float(_) | Arg::Int(_)) => {
                    let max = s.float_max().unwrap_or(f64::MAX);
                    // As short as the type's own digits.
                    let max = if s == Scalar::F64 { format!("{max:e}") } else { format!("{:e}", max as f32) };
                    (
                        Refusal::Value,
                        format!("{} overflows {} {} (largest finite: {max})", arg.describe(), article(s.name()), s.name()),
                        format!("pass a float within ±{max}"),
                    )
                }
                _ => wrong_type(),
            }),
            (ParamKind::Pe, Arg::Int(v)) => {
                let n = ctx.n_pes().map_or(u32::MAX as i128, i128::from);
                if (0..n).contains(v) {
                    Ok(*v as u64)
                } else {
                    Err((
                        Refusal::Value,
                        format!("PE {v} does not exist (this job has PEs 0..{n})"),
                        format!("pass a PE number in 0..{n}"),
                    ))
                }
            }
            (ParamKind::Team, Arg::Team(t)) => Ok(t.raw() as u32 as u64),
            (ParamKind::Unsupported, _) => Err((
                Refusal::Type,
                format!(
                    "its type `{}` cannot be passed from a dynamic host",
                    if param.rust_type.is_empty() { "(unknown)" } else { &param.rust_type }
                ),
                "give the kernel scalar, pointer, Pe or Team parameters (pass a struct through device memory)".into(),
            )),
            _ => Err(wrong_type()),
        }
    }
}

/// A number's bytes for a scalar parameter, or `None` when it is the wrong
/// kind or out of range. Ints are accepted for floats; floats are not
/// accepted for ints, nor anything but bools for bools.
fn encode_scalar(s: Scalar, arg: &Arg) -> Option<u64> {
    match (s.class(), arg) {
        (ScalarClass::Signed | ScalarClass::Unsigned, Arg::Int(v)) => {
            let (lo, hi) = s.int_range()?;
            // Two's complement, truncated to the type's width.
            let bits = s.size() * 8;
            ((lo..=hi).contains(v)).then(|| (*v as u64) & (u64::MAX >> (64 - bits)))
        }
        (ScalarClass::Float, Arg::Float(_) | Arg::Int(_)) => {
            let v = match arg {
                Arg::Float(f) => *f,
                Arg::Int(i) => *i as f64,
                _ => return None,
            };
            // A finite value that the conversion makes infinite is refused.
            let (bits, infinite) = match s {
                Scalar::F16 => {
                    let h = half::f16::from_f64(v);
                    (h.to_bits() as u64, h.is_infinite())
                }
                Scalar::BF16 => {
                    let h = half::bf16::from_f64(v);
                    (h.to_bits() as u64, h.is_infinite())
                }
                Scalar::F32 => {
                    let f = v as f32;
                    (f.to_bits() as u64, f.is_infinite())
                }
                _ => (v.to_bits(), v.is_infinite()),
            };
            (!(v.is_finite() && infinite)).then_some(bits)
        }
        (ScalarClass::Bool, Arg::Bool(b)) => Some(*b as u64),
        _ => None,
    }
}

/// `name: Type` of a parameter.
fn describe(p: &ParamInfo) -> String {
    if p.rust_type.is_empty() {
        p.name.clone()
    } else {
        format!("{}: {}", p.name, p.rust_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ctx;
    impl ArgContext for Ctx {
        fn device(&self) -> i32 {
            1
        }
        fn n_pes(&self) -> Option<u32> {
            Some(2)
        }
        fn is_symmetric(&self, ptr: u64, bytes: u64) -> bool {
            ptr >= 0x10000 && ptr + bytes <= 0x20000
        }
        fn location_of(&self, ptr: u64) -> Option<Location> {
            Some(match ptr {
                0x10000..0x100000 => Location::Cuda(1),
                0x5000_0000 => Location::Cpu,
                0x7000_0000 => Location::Cuda(0),
                _ => Location::Unknown,
            })
        }
    }

    /// A tensor of unknown location is asked of the context; a context
    /// that cannot tell (no GPU) takes it as device memory.
    #[test]
    fn articles_are_read_as_spoken() {
        for (word, a) in [
            ("f32", "an"),
            ("i8", "an"),
            ("u32", "a"),
            ("uint8", "a"),
            ("ndarray", "an"),
            ("object", "an"),
            ("str", "a"),
            ("int beyond 128 bits", "an"),
            ("bf16", "a"),
        ] {
            assert_eq!(article(word), a, "{word}");
        }
    }

    #[test]
    fn floats_round_and_only_a_finite_value_made_infinite_is_refused() {
        let f16_max = half::f16::MAX.to_bits() as u64;
        // 65510 rounds down to f16's largest value; 65520 and up overflow.
        assert_eq!(
            encode_scalar(Scalar::F16, &Arg::Float(65510.0)),
            Some(f16_max)
        );
        assert_eq!(encode_scalar(Scalar::F16, &Arg::Float(65520.0)), None);
        assert_eq!(encode_scalar(Scalar::F32, &Arg::Float(1e39)), None);
        assert_eq!(encode_scalar(Scalar::BF16, &Arg::Float(-1e39)), None);
        // Infinity and NaN asked for are passed on.
        let inf = f32::INFINITY.to_bits() as u64;
        assert_eq!(
            encode_scalar(Scalar::F32, &Arg::Float(f64::INFINITY)),
            Some(inf)
        );
        assert!(encode_scalar(Scalar::F64, &Arg::Float(f64::NAN)).is_some());
    }

    #[test]
    fn unknown_locations_are_looked_up() {
        struct NoGpu;
        impl ArgContext for NoGpu {
            fn device(&self) -> i32 {
                1
            }
            fn n_pes(&self) -> Option<u32> {
                None
            }
            fn is_symmetric(&self, _: u64, _: u64) -> bool {
                false
            }
        }
        let s = sig(&[("y", "*mut f32", 8)]);
        let at = |ptr| {
            vec![Arg::Tensor(TensorArg {
                ptr,
                bytes: 256,
                dtype: Ok(Scalar::F32),
                contiguous: true,
                location: Location::Unknown,
            })]
        };
        assert!(s.encode(&at(0x90000), &Ctx).is_ok());
        let mut empty = at(0);
        if let Arg::Tensor(t) = &mut empty[0] {
            t.bytes = 0;
        }
        assert!(s.encode(&empty, &Ctx).is_ok());
        assert!(s.encode(&at(0x1), &NoGpu).is_ok());
        for (ptr, says) in [
            (0x5000_0000, "host memory"),
            (0x7000_0000, "cuda:0"),
            (0x1, "not memory CUDA allocated"),
        ] {
            let msg = s.encode(&at(ptr), &Ctx).unwrap_err().to_string();
            assert!(msg.contains(says), "{ptr:#x}: {msg}");
        }
    }

    fn sig(params: &[(&str, &str, u32)]) -> Signature {
        Signature::new(&crate::runtime::launch::tests::info(params, false))
    }

    fn tensor(ptr: u64, dtype: Scalar) -> Arg {
        Arg::Tensor(TensorArg {
            ptr,
            bytes: 256,
            dtype: Ok(dtype),
            contiguous: true,
            location: Location::Cuda(1),
        })
    }

    fn refused(s: &Signature, args: &[Arg]) -> (Refusal, String) {
        match s.encode(args, &Ctx).unwrap_err() {
            Error::ArgumentRejected { refusal, .. } => {
                (refusal, s.encode(args, &Ctx).unwrap_err().to_string())
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn every_check_names_the_kernel_the_parameter_and_the_fix() {
        let s = sig(&[
            ("x", "SymPtr<bf16>", 8),
            ("y", "*mut f32", 8),
            ("n", "u32", 4),
            ("scale", "f32", 4),
            ("pe", "Pe", 4),
            ("team", "Team", 4),
        ]);
        let good = |i: usize, a: Arg| {
            let mut v = vec![
                tensor(0x10000, Scalar::BF16),
                tensor(0x90000, Scalar::F32),
                Arg::Int(7),
                Arg::Float(0.5),
                Arg::Int(1),
                Arg::Team(Team::WORLD),
            ];
            v[i] = a;
            v
        };
        let buf = s
            .encode(&good(0, tensor(0x10000, Scalar::BF16)), &Ctx)
            .unwrap();
        assert_eq!(
            buf.slots(),
            &[0x10000, 0x90000, 7, 0.5f32.to_bits() as u64, 1, 0]
        );
        let cases: Vec<(Vec<Arg>, Refusal, &[&str])> = vec![
            (
                good(0, tensor(0x10000, Scalar::F32)),
                Refusal::Type,
                &[
                    "`x: SymPtr<bf16>`",
                    "float32",
                    "symm_mem.empty(..., dtype=torch.bfloat16)",
                ],
            ),
            (
                good(0, tensor(0x90000, Scalar::BF16)),
                Refusal::Value,
                &["symmetric heap", "_symmetric_memory.empty"],
            ),
            (
                good(1, Arg::Int(3)),
                Refusal::Type,
                &["`y: *mut f32`", "the int 3"],
            ),
            (
                good(2, Arg::Int(-1)),
                Refusal::Value,
                &["`n: u32`", "-1 does not fit", "0..=4294967295"],
            ),
            (
                good(2, Arg::Float(1.5)),
                Refusal::Type,
                &["`n: u32`", "the float 1.5"],
            ),
            (
                good(3, Arg::Other("str".into())),
                Refusal::Type,
                &["`scale: f32`", "a str"],
            ),
            (
                good(3, Arg::Other("int beyond 128 bits".into())),
                Refusal::Type,
                &["an int beyond 128 bits"],
            ),
            (
                good(3, Arg::Float(1e300)),
                Refusal::Value,
                &[
                    "`scale: f32`",
                    "the float 1e300 overflows an f32",
                    "±3.4028235e38",
                ],
            ),
            (good(4, Arg::Int(2)), Refusal::Value, &["PE 2", "0..2"]),
            (
                good(5, Arg::Int(0)),
                Refusal::Type,
                &["`team: Team`", "Team.WORLD"],
            ),
        ];
        for (args, want, needles) in cases {
            let (refusal, msg) = refused(&s, &args);
            assert_eq!(refusal, want, "{msg}");
            assert!(msg.contains("kernel `k`") && msg.contains("Fix:"), "{msg}");
            for n in needles {
                assert!(msg.contains(n), "{n:?} not in {msg}");
            }
        }
        let mut t = TensorArg {
            ptr: 0x10000,
            bytes: 8,
            dtype: Ok(Scalar::BF16),
            contiguous: false,
            location: Location::Cuda(1),
        };
        let (r, msg) = refused(&s, &good(0, Arg::Tensor(t.clone())));
        assert!(r == Refusal::Value && msg.contains("contiguous()"), "{msg}");
        t.contiguous = true;
        t.location = Location::Cuda(0);
        let (r, msg) = refused(&s, &good(0, Arg::Tensor(t.clone())));
        assert!(
            r == Refusal::Value && msg.contains("cuda:0") && msg.contains("cuda:1"),
            "{msg}"
        );
        t.location = Location::Cpu;
        let (_, msg) = refused(&s, &good(0, Arg::Tensor(t)));
        assert!(msg.contains("host memory"), "{msg}");
        let (r, msg) = refused(&s, &[Arg::Int(1)]);
        assert!(
            r == Refusal::Type && msg.contains("6 argument(s)") && msg.contains("1 were given"),
            "{msg}"
        );
    }

    #[test]
    fn scalars_are_encoded_at_their_width() {
        let s = sig(&[
            ("a", "i8", 1),
            ("b", "u64", 8),
            ("c", "bf16", 2),
            ("d", "bool", 1),
            ("e", "f64", 8),
        ]);
        let buf = s
            .encode(
                &[
                    Arg::Int(-1),
                    Arg::Int(u64::MAX as i128),
                    Arg::Int(1),
                    Arg::Bool(true),
                    Arg::Float(2.0),
                ],
                &Ctx,
            )
            .unwrap();
        assert_eq!(buf.slots(), &[0xff, u64::MAX, 0x3f80, 1, 2.0f64.to_bits()]);
        assert!(
            s.encode(
                &[
                    Arg::Int(128),
                    Arg::Int(0),
                    Arg::Int(0),
                    Arg::Bool(false),
                    Arg::Int(0)
                ],
                &Ctx
            )
            .is_err()
        );
        assert!(
            s.encode(
                &[
                    Arg::Int(0),
                    Arg::Int(0),
                    Arg::Int(0),
                    Arg::Int(1),
                    Arg::Int(0)
                ],
                &Ctx
            )
            .is_err()
        );
    }

    /// A tensor's dtype must be the parameter's; where only the bits'
    /// meaning differs (bf16 for u16) the fix names `view`, which keeps them.
    #[test]
    fn tensors_of_another_dtype_are_refused_with_the_view_fix() {
        let s = sig(&[("y", "*const u16", 8)]);
        assert_eq!(
            s.encode(&[tensor(0x90000, Scalar::U16)], &Ctx)
                .unwrap()
                .slots(),
            &[0x90000]
        );
        let (r, msg) = refused(&s, &[tensor(0x90000, Scalar::BF16)]);
        assert!(
            r == Refusal::Type && msg.contains("tensor.view(torch.uint16)"),
            "{msg}"
        );
        let (r, msg) = refused(&s, &[tensor(0x90000, Scalar::F32)]);
        assert!(
            r == Refusal::Type && msg.contains("torch.uint16") && !msg.contains("view"),
            "{msg}"
        );
    }

    #[test]
    fn type_names_are_shortened_to_their_last_segments() {
        assert_eq!(
            short_type("nvshmem_types::sym::SymPtr<half::bfloat::bf16>"),
            "SymPtr<bf16>"
        );
        assert_eq!(short_type("[u16; 4]"), "[u16; 4]");
        assert_eq!(short_type("u32"), "u32");
    }

    #[test]
    fn a_struct_by_value_is_refused_with_a_reason() {
        let s = sig(&[("p", "Params", 16)]);
        let (r, msg) = refused(&s, &[Arg::Other("dict".into())]);
        assert!(r == Refusal::Type && msg.contains("`Params`"), "{msg}");
    }
}
