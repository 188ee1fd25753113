//! What a kernel parameter accepts, read from its Rust type as the manifest
//! records it ([`ParamInfo::rust_type`](super::ParamInfo::rust_type)): the
//! host's argument checks and the builder's C header read the same kinds.

/// Generates [`Scalar`] and its facts from one table: variant, Rust name,
/// size, class, other Rust names, PyTorch's dtype name, the array
/// interface's type string (empty where it has none).
macro_rules! scalars {
    ($($v:ident $name:literal $size:literal $class:ident [$($alias:literal),*] $torch:literal $typestr:literal;)*) => {
        /// An element or scalar type that kernel parameters use.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Scalar {
            $(#[doc = concat!("`", $name, "`")] $v,)*
        }

        impl Scalar {
            /// Every scalar type.
            pub const ALL: &'static [Scalar] = &[$(Scalar::$v),*];

            /// The Rust name, such as `bf16`.
            pub const fn name(self) -> &'static str {
                match self { $(Scalar::$v => $name,)* }
            }

            /// Size in bytes.
            pub const fn size(self) -> u32 {
                match self { $(Scalar::$v => $size,)* }
            }

            /// Integer, float or bool.
            pub const fn class(self) -> ScalarClass {
                match self { $(Scalar::$v => ScalarClass::$class,)* }
            }

            /// PyTorch's name of the dtype, such as `bfloat16` (`torch.bfloat16`).
            pub const fn torch_name(self) -> &'static str {
                match self { $(Scalar::$v => $torch,)* }
            }

            /// The type named `name` in Rust (the last path segment: `half::bf16`
            /// is `bf16`; `usize` is `u64`, `isize` `i64`, as on the GPU).
            ///
            /// ```
            /// use nvshmem_types::manifest::Scalar;
            /// assert_eq!(Scalar::from_rust("half::bf16"), Some(Scalar::BF16));
            /// assert_eq!(Scalar::from_rust("usize"), Some(Scalar::U64));
            /// assert_eq!(Scalar::from_rust("TensorMap"), None);
            /// ```
            pub fn from_rust(name: &str) -> Option<Scalar> {
                let last = name.trim().rsplit("::").next().unwrap_or("");
                match last {
                    $($name $(| $alias)* => Some(Scalar::$v),)*
                    _ => None,
                }
            }

            /// The type of an `__cuda_array_interface__` `typestr` such as `<f4`
            /// (`bf16` has none).
            ///
            /// ```
            /// use nvshmem_types::manifest::Scalar;
            /// assert_eq!(Scalar::from_typestr("<f4"), Some(Scalar::F32));
            /// assert_eq!(Scalar::from_typestr("|u1"), Some(Scalar::U8));
            /// assert_eq!(Scalar::from_typestr(">f4"), None); // big-endian
            /// ```
            pub fn from_typestr(typestr: &str) -> Option<Scalar> {
                // One-byte types have no byte order (`|`); on this little-endian
                // host `=` is `<`.
                let s = typestr.replace('=', "<");
                let s = if s.len() == 3 && s.ends_with('1') { s.replacen('<', "|", 1) } else { s };
                $(if !$typestr.is_empty() && s == $typestr {
                    return Some(Scalar::$v);
                })*
                None
            }

            /// The type PyTorch names `name` (`bfloat16`, `float32`, ...).
            ///
            /// ```
            /// use nvshmem_types::manifest::Scalar;
            /// assert_eq!(Scalar::from_torch("bfloat16"), Some(Scalar::BF16));
            /// ```
            pub fn from_torch(name: &str) -> Option<Scalar> {
                match name.trim_start_matches("torch.") {
                    $($torch => Some(Scalar::$v),)*
                    _ => None,
                }
            }
        }
    };
}

scalars! {
    I8 "i8" 1 Signed [] "int8" "|i1";
    U8 "u8" 1 Unsigned [] "uint8" "|u1";
    I16 "i16" 2 Signed [] "int16" "<i2";
    U16 "u16" 2 Unsigned [] "uint16" "<u2";
    I32 "i32" 4 Signed [] "int32" "<i4";
    U32 "u32" 4 Unsigned [] "uint32" "<u4";
    I64 "i64" 8 Signed ["isize"] "int64" "<i8";
    U64 "u64" 8 Unsigned ["usize"] "uint64" "<u8";
    F16 "f16" 2 Float [] "float16" "<f2";
    BF16 "bf16" 2 Float [] "bfloat16" "";
    F32 "f32" 4 Float [] "float32" "<f4";
    F64 "f64" 8 Float [] "float64" "<f8";
    Bool "bool" 1 Bool [] "bool" "|b1";
}

/// What kind of number a [`Scalar`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarClass {
    /// `i8` ... `i64`.
    Signed,
    /// `u8` ... `u64`.
    Unsigned,
    /// `f16`, `bf16`, `f32`, `f64`.
    Float,
    /// `bool`.
    Bool,
}

impl Scalar {
    /// The integers this type holds, `(min, max)`; `None` for floats and bool.
    pub fn int_range(self) -> Option<(i128, i128)> {
        let bits = self.size() * 8;
        match self.class() {
            ScalarClass::Signed => Some((-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)),
            ScalarClass::Unsigned => Some((0, (1i128 << bits) - 1)),
            _ => None,
        }
    }

    /// The largest finite value of a float type (a finite value beyond it
    /// converts to infinity, or rounds down to it within half a step);
    /// `None` for integers and bool.
    pub fn float_max(self) -> Option<f64> {
        match self {
            Scalar::F16 => Some(half::f16::MAX.to_f64()),
            Scalar::BF16 => Some(half::bf16::MAX.to_f64()),
            Scalar::F32 => Some(f32::MAX as f64),
            Scalar::F64 => Some(f64::MAX),
            _ => None,
        }
    }
}

/// What a kernel parameter accepts, from its Rust type in the manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// `SymPtr<T>`: a tensor inside NVSHMEM's symmetric heap, of `T` when
    /// `T` is a [`Scalar`] (any element type otherwise).
    Symmetric(Option<Scalar>),
    /// `*mut T`, `*const T`, `&T` or `DevicePtr<T>`: a tensor on this
    /// process's GPU, of `T` when it is a [`Scalar`].
    Device(Option<Scalar>),
    /// A number passed by value.
    Scalar(Scalar),
    /// `Pe`: a PE number below the PE count.
    Pe,
    /// `Team`: a team handle.
    Team,
    /// A type a dynamic host cannot build (a struct by value), or a
    /// parameter whose type the manifest does not name.
    Unsupported,
}

impl ParamKind {
    /// The kind of `param`, from its `rust_type`.
    ///
    /// ```
    /// use nvshmem_types::manifest::{ParamKind, Scalar};
    /// assert_eq!(ParamKind::parse("nvshmem_device::SymPtr<half::bf16>"), ParamKind::Symmetric(Some(Scalar::BF16)));
    /// assert_eq!(ParamKind::parse("*const TensorMap"), ParamKind::Device(None));
    /// assert_eq!(ParamKind::parse("u32"), ParamKind::Scalar(Scalar::U32));
    /// assert_eq!(ParamKind::parse("Pe"), ParamKind::Pe);
    /// assert_eq!(ParamKind::parse("Params"), ParamKind::Unsupported);
    /// ```
    pub fn parse(rust_type: &str) -> ParamKind {
        let t = rust_type.trim();
        for prefix in ["*mut ", "*const ", "&mut ", "&"] {
            if let Some(elem) = t.strip_prefix(prefix) {
                return ParamKind::Device(Scalar::from_rust(elem));
            }
        }
        let (head, generic) = match t.split_once('<') {
            Some((head, rest)) => (head, rest.strip_suffix('>')),
            None => (t, None),
        };
        let last = head.rsplit("::").next().unwrap_or("");
        match (last, generic) {
            ("SymPtr", Some(elem)) => ParamKind::Symmetric(Scalar::from_rust(elem)),
            ("DevicePtr", Some(elem)) => ParamKind::Device(Scalar::from_rust(elem)),
            ("Pe", None) => ParamKind::Pe,
            ("Team", None) => ParamKind::Team,
            (name, None) => {
                Scalar::from_rust(name).map_or(ParamKind::Unsupported, ParamKind::Scalar)
            }
            _ => ParamKind::Unsupported,
        }
    }

    /// A number passed by value: `Some(true)` for a float, `Some(false)`
    /// for an integer (`bool`, `Pe` and `Team` too); `None` otherwise.
    pub fn value_is_float(self) -> Option<bool> {
        match self {
            ParamKind::Scalar(s) => Some(s.class() == ScalarClass::Float),
            ParamKind::Pe | ParamKind::Team => Some(false),
            _ => None,
        }
    }

    /// A pointer (`SymPtr<T>`, `*const T`, ...): its element type, when
    /// that is a [`Scalar`].
    pub fn pointee(self) -> Option<Option<Scalar>> {
        match self {
            ParamKind::Symmetric(e) | ParamKind::Device(e) => Some(e),
            _ => None,
        }
    }
}
