//! GPU tests of the device API and the host runtime, each on 1, 2 and 4 PEs
//! (`nvshmem_host::harness`). Their kernels are `tests/kernels/runtime`.
//!
//! Without a GPU every run prints `SKIPPED` with the reason and nothing
//! passes; `NVSHMEM_RS_REQUIRE_GPU=1` turns that into a failure. Runs of 4 PEs
//! on one GPU need CUDA MPS (see docs/guide.md, host side).
//!
//! Every destination a kernel writes starts poisoned (`TestPe::poisoned`:
//! NaN, or the test's own sentinel), so that an element a kernel skipped
//! fails the check. The checks of some kernels are in `tests/checks`,
//! shared with `tests/check_the_checks.rs` (CPU), which shows they fail on
//! broken outputs.

#[macro_use]
mod common;
mod checks;
use checks::pattern;
use common::ALL;
use nvshmem_host::harness::{self, TestPe, TestResult, check_eq, ensure};
use nvshmem_host::{Cmp, Error, Kernel, KernelArgs, Nvshmem, SignalOp, Team};

const KERNELS: &str = "runtime-kernels";

// Typed launches of `tests/kernels/runtime`; the tests that check the string
// API's own refusals keep `Module::kernel` and `Kernel::launch`.
nvshmem_host::include_kernels!(runtime_kernels);

/// The runtime kernels, typed, from the folder the harness uses.
fn kernels(pe: &TestPe) -> nvshmem_host::Result<runtime_kernels::Kernels> {
    runtime_kernels::Kernels::new(&pe.module(KERNELS)?)
}

/// This PE's index and its ring neighbours (next, previous).
fn ring(nv: &Nvshmem) -> (u32, u32, u32) {
    let (me, n) = (nv.my_pe(), nv.n_pes());
    (me.index(), me.ring_next(n).index(), me.ring_prev(n).index())
}

/// Every PE's kernels are done and their puts delivered.
fn barrier(nv: &Nvshmem) -> TestResult {
    nv.barrier_all_on_stream(nv.stream())?;
    nv.synchronize(nv.stream())?;
    Ok(())
}

/// Launches `k` on `grid × block` threads with `args`, then [`barrier`].
///
/// # Safety
/// The arguments are valid for the kernel (each call says why).
unsafe fn launch_then_barrier<A: KernelArgs>(
    nv: &Nvshmem,
    k: &Kernel,
    (grid, block): (u32, u32),
    args: A,
) -> TestResult {
    // SAFETY: the caller's.
    unsafe { k.launch(nv.stream(), grid, block, args)? };
    barrier(nv)
}

fn put_block(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (me, _, prev) = ring(nv);
    let n = 1000;
    let mine: Vec<f32> = (0..n).map(|i| checks::put_block_value(me, i)).collect();
    let src = nv.alloc_from(&mine)?;
    let dest = pe.poisoned::<f32>(n)?;
    let k = kernels(pe)?;
    // SAFETY: the kernel reads `n` floats of `src` and writes `n` of `dest`.
    unsafe { runtime_kernels::put_block_to_next(&k, nv.stream(), 1, 256, &dest, &src, n as u64)? };
    barrier(nv)?;
    checks::put_block(prev, n, &dest.to_vec(nv.stream())?)
}

/// `put_pod`/`get_pod` at every alignment mix (same residue mod 16, 8, 4, or
/// none), lengths from 1 byte to 4 KiB + 3, in thread, warp and block scope:
/// the bytes land exactly, and the guard bytes around them stay untouched
/// (they hold the test's poison, even, where every byte sent is odd).
fn unaligned_bytes(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (me, next, prev) = ring(nv);
    let k = pe.module(KERNELS)?.kernel("copy_bytes")?;
    const SPAN: usize = 4096 + 64;
    let byte = |pe: u32, i: usize| (pe as usize * 89 + i * 7 + 1) as u8 | 1;
    let poison = pe.poison::<u8>() & !1;
    let mine: Vec<u8> = (0..SPAN).map(|i| byte(me, i)).collect();
    // (dest offset, source offset, length)
    let cases: &[(usize, usize, usize)] = &[
        (0, 0, 4096),
        (16, 32, 4099),
        (8, 24, 1000),
        (4, 12, 333),
        (3, 7, 1001),
        (1, 2, 17),
        (5, 5, 1),
        (0, 0, 8),
        (9, 1, 64),
    ];
    for get in [false, true] {
        for scope in 0..3u32 {
            for &(doff, soff, len) in cases {
                // A put writes the next PE's `sym`; a get reads it into `local`.
                let sym = nv.alloc_from(&if get {
                    mine.clone()
                } else {
                    vec![poison; SPAN]
                })?;
                let local = nv.alloc_from(&if get {
                    vec![poison; SPAN]
                } else {
                    mine.clone()
                })?;
                barrier(nv)?;
                let args = (
                    sym.sym_ptr(),
                    local.device_ptr(),
                    doff as u64,
                    soff as u64,
                    len as u64,
                    scope,
                    get as u32,
                );
                // SAFETY: both buffers hold SPAN bytes; offset + len < SPAN.
                unsafe { launch_then_barrier(nv, &k, (1, 128), args)? };
                // A put into this PE came from the previous one; a get read the next.
                let (got, from) = if get {
                    (local.to_vec(nv.stream())?, next)
                } else {
                    (sym.to_vec(nv.stream())?, prev)
                };
                let want: Vec<u8> = (0..SPAN)
                    .map(|i| {
                        if (doff..doff + len).contains(&i) {
                            byte(from, soff + i - doff)
                        } else {
                            poison
                        }
                    })
                    .collect();
                let what = format!(
                    "{} scope {} dest+{doff} src+{soff} len {len}",
                    if get { "get_pod" } else { "put_pod" },
                    ["thread", "warp", "block"][scope as usize]
                );
                check_eq(&what, &got, &want)?;
            }
        }
    }
    Ok(())
}

fn get_nbi(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (me, _, prev) = ring(nv);
    let (blocks, chunk) = (5u32, 37usize);
    let n = blocks as usize * chunk;
    let src = nv.alloc_from(&(0..n).map(|i| pattern(me, i, 0)).collect::<Vec<_>>())?;
    let dest = pe.poisoned::<u64>(n)?;
    barrier(nv)?; // every PE's `src` is written
    let k = kernels(pe)?;
    // SAFETY: block b reads and writes elements [b*chunk, (b+1)*chunk).
    unsafe {
        runtime_kernels::get_nbi_from_prev(&k, nv.stream(), blocks, 32, &dest, &src, chunk as u64)?
    };
    nv.synchronize(nv.stream())?;
    let want: Vec<u64> = (0..n).map(|i| pattern(prev, i, 0)).collect();
    let got = dest.to_vec(nv.stream())?;
    barrier(nv)?; // nobody frees `src` while a peer reads it
    check_eq("get_nbi_from_prev", &got, &want)
}

fn p_and_g(pe: &mut TestPe) -> TestResult {
    let module = pe.module(KERNELS)?;
    p_and_g_in(pe, module)
}

/// `p_and_g` with the module compiled from its PTX on this GPU (through the
/// driver's linker when the builder compiled it separately).
fn p_and_g_from_ptx(pe: &mut TestPe) -> TestResult {
    let manifest = pe.ptx_dir().join(format!("{KERNELS}.json"));
    let module = pe
        .nvshmem()
        .load_module_with(manifest, nvshmem_host::ModuleImage::Ptx)?;
    p_and_g_in(pe, module)
}

fn p_and_g_in(pe: &mut TestPe, module: nvshmem_host::Module) -> TestResult {
    let nv = pe.nvshmem();
    let (me, _, prev) = ring(nv);
    let n = 300usize;
    let dest = pe.poisoned::<u64>(n)?;
    let out = pe.poisoned::<u64>(n)?;
    let blocks = (n as u32).div_ceil(128);
    // SAFETY: thread i < n writes element i of the next PE's `dest`.
    unsafe {
        module
            .kernel("p_to_next")?
            .launch(nv.stream(), blocks, 128, (dest.sym_ptr(), n as u64))?
    };
    barrier(nv)?;
    let want: Vec<u64> = (0..n).map(|i| pattern(prev, i, 0)).collect();
    check_eq("p_to_next", &dest.to_vec(nv.stream())?, &want)?;
    // SAFETY: thread i < n reads element i of the next PE's `dest`, writes `out[i]`.
    unsafe {
        module.kernel("g_from_next")?.launch(
            nv.stream(),
            blocks,
            128,
            (out.device_ptr(), dest.sym_ptr(), n as u64),
        )?
    };
    nv.synchronize(nv.stream())?;
    let got = out.to_vec(nv.stream())?;
    barrier(nv)?;
    // The next PE's `dest` holds what this PE put there.
    let want: Vec<u64> = (0..n).map(|i| pattern(me, i, 0)).collect();
    check_eq("g_from_next", &got, &want)
}

fn atomic_fetch_add(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (blocks, threads) = (4u32, 128u32);
    let per_pe = (blocks * threads) as usize;
    let total = per_pe as u64 * nv.n_pes() as u64;
    let counter = nv.alloc_zeroed::<u64>(1)?;
    let fetched = pe.poisoned::<u64>(per_pe)?;
    let k = pe.module(KERNELS)?.kernel("count_on_pe0")?;
    let args = (counter.sym_ptr(), fetched.device_ptr());
    // SAFETY: one atomic on PE 0's counter and one local store per thread.
    unsafe { launch_then_barrier(nv, &k, (blocks, threads), args)? };
    let mut seen = fetched.to_vec(nv.stream())?;
    seen.sort_unstable();
    seen.dedup();
    ensure(seen.len() == per_pe, || {
        format!(
            "kernel `count_on_pe0`: {} distinct fetched values, expected {per_pe}",
            seen.len()
        )
    })?;
    ensure(seen.iter().all(|&v| v < total), || {
        format!(
            "kernel `count_on_pe0`: fetched {} >= the total {total}",
            seen[seen.len() - 1]
        )
    })?;
    if nv.my_pe().index() == 0 {
        check_eq("count_on_pe0", &counter.to_vec(nv.stream())?, &[total])?;
    }
    Ok(())
}

fn atomic_sequence(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (_, _, prev) = ring(nv);
    let slots = nv.alloc_zeroed::<u32>(nv.n_pes() as usize)?;
    let out = pe.poisoned::<u32>(9)?;
    let k = pe.module(KERNELS)?.kernel("atomic_sequence")?;
    // SAFETY: one thread works on its own slot of the next PE and on `out[0..9]`.
    unsafe { k.launch(nv.stream(), 1, 32, (slots.sym_ptr(), out.device_ptr()))? };
    barrier(nv)?;
    check_eq(
        "atomic_sequence",
        &out.to_vec(nv.stream())?,
        &[5, 8, 20, 20, 7, 8, 0x38, 0x18, 0x10b],
    )?;
    // The previous PE worked on slot `prev` of this PE's `slots`.
    let got = slots.to_vec(nv.stream())?;
    check_eq(
        "atomic_sequence (final slot)",
        &got[prev as usize..=prev as usize],
        &[0x10b],
    )
}

/// The kernel counts wrong elements itself; the host also reads what
/// arrived in `recv` and the signal, each round (so a kernel that did
/// nothing, or sent last round's data, fails).
fn put_signal_ring(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (_, _, prev) = ring(nv);
    let n = 1000usize;
    let send = pe.poisoned::<u64>(n)?;
    let recv = pe.poisoned::<u64>(n)?;
    let signal = nv.alloc_zeroed::<u64>(1)?;
    let errors = pe.poisoned::<u32>(1)?;
    let k = pe.module(KERNELS)?.kernel("ring_put_signal")?;
    for round in 1..=3u64 {
        let args = (
            send.sym_ptr(),
            recv.sym_ptr(),
            signal.sym_ptr(),
            n as u64,
            round,
            errors.device_ptr(),
        );
        // SAFETY: the block writes `n` of `send`, puts them to the next PE's
        // `recv` with its signal, and waits for its own.
        unsafe { k.launch(nv.stream(), 1, 256, args)? };
        barrier(nv)?;
        let s = nv.stream();
        let seen = (
            &recv.to_vec(s)?[..],
            signal.to_vec(s)?[0],
            errors.to_vec(s)?[0],
        );
        checks::put_signal_ring(prev, (n, round), seen)?;
        errors.fill(s, pe.poison())?;
        barrier(nv)?; // every PE has read its `recv` before the next round
    }
    Ok(())
}

fn wait_until_ring(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (_, _, prev) = ring(nv);
    let value = pe.poisoned::<i32>(1)?;
    let flag = nv.alloc_zeroed::<i64>(1)?;
    let out = pe.poisoned::<i32>(2)?;
    let k = pe.module(KERNELS)?.kernel("ring_wait_until")?;
    for round in 1..=3i64 {
        let args = (value.sym_ptr(), flag.sym_ptr(), round, out.device_ptr());
        // SAFETY: one thread: a `p` and an atomic to the next PE, a wait on its own flag.
        unsafe { launch_then_barrier(nv, &k, (1, 1), args)? };
        check_eq(
            &format!("ring_wait_until (round {round}: [value, test])"),
            &out.to_vec(nv.stream())?,
            &[prev as i32 * 10 + round as i32, 1],
        )?;
    }
    Ok(())
}

fn iput(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (me, _, prev) = ring(nv);
    let n = 100usize;
    let src = nv.alloc_from(
        &(0..n as i32)
            .map(|i| me as i32 * 1000 + i)
            .collect::<Vec<_>>(),
    )?;
    let dest = pe.poisoned::<i32>(2 * n)?;
    let k = pe.module(KERNELS)?.kernel("iput_every_other")?;
    let args = (dest.sym_ptr(), src.sym_ptr(), n as u64);
    // SAFETY: writes dest[2i] on the next PE for i < n (2n elements allocated).
    unsafe { launch_then_barrier(nv, &k, (1, 32), args)? };
    checks::iput(prev, n, pe.poison(), &dest.to_vec(nv.stream())?)
}

fn peer_ptr(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (_, next, prev) = ring(nv);
    let n = 256usize;
    let dest = pe.poisoned::<u32>(n)?;
    let out = pe.poisoned::<u32>(1)?;
    // Every PE that shares memory with this one is load/store reachable.
    let shared = nv.team_n_pes(Team::SHARED)? == nv.n_pes();
    let host_view = dest.peer_ptr(nvshmem_host::Pe::new(next))?;
    ensure(host_view.is_some() == shared, || {
        format!(
            "SymBuffer::peer_ptr(PE {next}) is {host_view:?}, but the PEs share memory: {shared}"
        )
    })?;
    let k = pe.module(KERNELS)?.kernel("store_through_ptr")?;
    let args = (dest.sym_ptr(), n as u64, out.device_ptr());
    // SAFETY: thread i < n stores element i of the next PE's `dest` when reachable.
    unsafe { launch_then_barrier(nv, &k, (2, 128), args)? };
    check_eq(
        "store_through_ptr (reachable)",
        &out.to_vec(nv.stream())?,
        &[shared as u32],
    )?;
    if shared {
        let want: Vec<u32> = (0..n as u32).map(|i| prev * 1000 + i).collect();
        check_eq("store_through_ptr", &dest.to_vec(nv.stream())?, &want)?;
    }
    Ok(())
}

/// `ptr`'s own peer lookup (which reads NVSHMEM's device state by offset)
/// gives what NVSHMEM's `nvshmem_ptr` gives, for every PE and addresses in,
/// at the edge of, and outside the heap; and it reaches every PE that shares
/// memory with this one.
fn ptr_matches_nvshmem_ptr(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let bytes = 4096u64;
    let dest = nv.alloc_zeroed::<u8>(bytes as usize)?;
    let out = pe.poisoned::<u32>(3)?;
    let k = pe.module(KERNELS)?.kernel("ptr_matches_nvshmem_ptr")?;
    // SAFETY: one thread writes `out[0..3]`; the addresses are only translated.
    unsafe { k.launch(nv.stream(), 1, 1, (dest.sym_ptr(), bytes, out.device_ptr()))? };
    nv.synchronize(nv.stream())?;
    let n = nv.n_pes();
    let shared = nv.team_n_pes(Team::SHARED)? == n;
    // Five addresses per PE, three of them in the heap (one past `dest` is
    // too): reachable on every PE that shares memory, on this one at least.
    let got = out.to_vec(nv.stream())?;
    check_eq(
        "ptr_matches_nvshmem_ptr ([disagreements, comparisons])",
        &got[..2],
        &[0, 5 * n],
    )?;
    let (lo, hi) = if shared { (3 * n, 3 * n) } else { (3, 3 * n) };
    ensure((lo..=hi).contains(&got[2]), || {
        format!(
            "ptr found {} of {} addresses reachable; expected {lo}..={hi}",
            got[2],
            5 * n
        )
    })
}

fn collective_launch(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let module = pe.module(KERNELS)?;
    let k = module.kernel("barrier_then_count")?;
    ensure(
        k.is_collective(),
        || "the manifest does not mark `barrier_then_count` collective",
    )?;
    ensure(
        !module.kernel("put_block_to_next")?.is_collective(),
        || "the manifest marks `put_block_to_next` collective",
    )?;
    let counter = nv.alloc_zeroed::<u64>(1)?;
    let out = pe.poisoned::<u64>(1)?;
    let threads = 128u32;
    let args = (counter.sym_ptr(), out.device_ptr());
    // SAFETY (all three): one atomic per thread on PE 0's counter, a local store.
    match unsafe { k.launch(nv.stream(), 1, threads, args) } {
        Err(Error::CollectiveLaunchRequired { .. }) => {}
        other => return Err(format!("plain launch of a collective kernel gave {other:?}").into()),
    }
    match unsafe { k.launch_collective(nv.stream(), 1 << 20, 1024, args) } {
        Err(Error::GridTooLarge { .. }) => {}
        other => return Err(format!("a 2^20-block collective launch gave {other:?}").into()),
    }
    unsafe { k.launch_collective(nv.stream(), 1, threads, args)? };
    barrier(nv)?;
    check_eq(
        "barrier_then_count",
        &out.to_vec(nv.stream())?,
        &[nv.n_pes() as u64 * threads as u64],
    )
}

fn kernel_fault(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let k = pe.module(KERNELS)?.kernel("fault")?;
    // SAFETY: not safe at all: the kernel writes through a null pointer, on
    // purpose; the context is unusable afterwards and nothing else runs.
    let launched =
        unsafe { k.launch(nv.stream(), 1, 1, (nvshmem_host::DevicePtr::<u64>::new(0),)) };
    let result = launched.and_then(|()| nv.synchronize(nv.stream()));
    match result {
        Err(e @ Error::KernelFault { .. }) => {
            let text = e.to_string();
            ensure(text.contains("`fault`"), || {
                format!("the fault does not name the kernel: {text}")
            })?;
            ensure(
                nv.is_poisoned(),
                || "the context is not marked unusable after a fault",
            )
        }
        other => Err(format!("a null write gave {other:?}, expected Error::KernelFault").into()),
    }
}

fn version_mismatch(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let ours = nv.version().to_string();
    // ptx/nvshmem-<version>/<arch>: look for the same arch under another version.
    let (Some(arch), Some(root)) = (
        pe.ptx_dir().file_name(),
        pe.ptx_dir().parent().and_then(|p| p.parent()),
    ) else {
        return Err(format!("unexpected ptx folder {}", pe.ptx_dir().display()).into());
    };
    let other = std::fs::read_dir(root)
        .map_err(|e| format!("cannot list {}: {e}", root.display()))?
        .filter_map(|d| d.ok())
        .map(|d| d.path().join(arch))
        .find(|p| {
            p.join("runtime-kernels.json").is_file()
                && !p.starts_with(pe.ptx_dir())
                && p != pe.ptx_dir()
        });
    let Some(other) = other else {
        return Err(format!(
            "no runtime-kernels built for another NVSHMEM version under {} (the root build.rs builds one when \
             NVSHMEM 3.8.0 is installed: `nvshmem-build setup` downloads it into the per-user cache)",
            root.display()
        )
        .into());
    };
    match nv.load_module_in(&other, KERNELS) {
        Err(e @ Error::VersionMismatch { .. }) => {
            let text = e.to_string();
            ensure(text.contains(&ours), || {
                format!("the mismatch error does not name {ours}: {text}")
            })
        }
        Ok(_) => Err(format!(
            "a module from {} loaded into NVSHMEM {ours}",
            other.display()
        )
        .into()),
        Err(e) => Err(format!("expected Error::VersionMismatch, got: {e}").into()),
    }
}

/// A module with NVSHMEM's version global but without its state global (as a
/// hand-made or stripped PTX would be) cannot be registered: loading it must
/// fail with `Error::ModuleNotRegistered`, so no kernel of it can be launched.
fn unregistrable_module(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let v = nv.version();
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .const .align 4 .b8 nvshmemi_device_lib_version_d[12] = \
         {{{}, 0, 0, 0, {}, 0, 0, 0, {}, 0, 0, 0}};\n\
         .visible .entry nothing()\n{{\n\tret;\n}}\n",
        v.major, v.minor, v.patch
    );
    let manifest = nvshmem_host::Manifest {
        format: nvshmem_host::MANIFEST_FORMAT,
        crate_name: "stripped".into(),
        nvshmem_version: v,
        arch: nvshmem_host::Arch::DEFAULT,
        ptx_isa: "8.0".into(),
        ptx: "stripped.ptx".into(),
        cubin: None,
        device_link: None,
        cuda_toolkit: None,
        kernels: Vec::new(),
    };
    match nv.load_module_image(ptx.as_bytes(), manifest) {
        Err(e @ Error::ModuleNotRegistered { .. }) => {
            let text = e.to_string();
            ensure(text.contains("nvshmemi_device_state_d"), || {
                format!("the error does not name the missing state global: {text}")
            })
        }
        Ok(_) => Err(String::from(
            "a module without NVSHMEM's state global loaded as if registered",
        )
        .into()),
        Err(e) => Err(format!("expected Error::ModuleNotRegistered, got: {e}").into()),
    }
}

/// A manifest that does not describe its image's kernel (stale beside a
/// rebuilt PTX) is refused when the kernel is looked up: fewer, more or
/// other-sized parameters than the image's (`cuFuncGetParamInfo`).
fn stale_manifest(pe: &mut TestPe) -> TestResult {
    use nvshmem_host::{KernelInfo, ParamInfo};
    let nv = pe.nvshmem();
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
               .visible .entry k(.param .u64 a, .param .u32 b)\n{\n\tret;\n}\n";
    let param = |name: &str, size: u32| ParamInfo {
        name: name.into(),
        rust_type: String::new(),
        c_type: String::new(),
        size,
        align: size,
    };
    let load = |params: Vec<ParamInfo>| {
        let manifest = nvshmem_host::Manifest {
            format: nvshmem_host::MANIFEST_FORMAT,
            crate_name: "stale".into(),
            nvshmem_version: nv.version(),
            arch: nvshmem_host::Arch::DEFAULT,
            ptx_isa: "8.0".into(),
            ptx: "stale.ptx".into(),
            cubin: None,
            device_link: None,
            cuda_toolkit: None,
            kernels: vec![KernelInfo::new("k", params, false)],
        };
        nv.load_module_image(ptx.as_bytes(), manifest)?
            .kernel("k")
            .map(drop)
    };
    load(vec![param("a", 8), param("b", 4)])?;
    for (params, says) in [
        (vec![param("a", 8)], "takes more parameters"),
        (vec![param("a", 8), param("b", 8)], "is 4 bytes"),
        (
            vec![param("a", 8), param("b", 4), param("c", 4)],
            "takes 2 parameters",
        ),
    ] {
        match load(params) {
            Err(e @ Error::ModuleLoad { .. }) => {
                let text = e.to_string();
                ensure(text.contains(says) && text.contains("stale"), || {
                    text.clone()
                })?
            }
            other => return Err(format!("a stale manifest ({says}) gave {other:?}").into()),
        }
    }
    Ok(())
}

/// A cubin made by a newer CUDA than the driver supports (its manifest's
/// `cuda_toolkit` says 99.0) must be refused with `Error::DriverTooOld`,
/// which names both versions, before the driver sees it: not a bare driver
/// code, not a crash.
fn driver_too_old(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let path = pe.ptx_dir().join(format!("{KERNELS}.json"));
    let mut manifest = nvshmem_host::Manifest::read(&path)?;
    let Some(cubin) = manifest.cubin.clone() else {
        return Err(format!("{} names no cubin", path.display()).into());
    };
    let image = std::fs::read(pe.ptx_dir().join(&cubin))
        .map_err(|e| format!("cannot read {cubin}: {e}"))?;
    manifest.cuda_toolkit = Some(nvshmem_host::CudaVersion::new(99, 0));
    match nv.load_module_image(&image, manifest) {
        Err(e @ Error::DriverTooOld { .. }) => {
            let text = e.to_string();
            ensure(
                text.contains("CUDA 99.0") && text.contains("this driver supports CUDA"),
                || format!("the error does not name both versions: {text}"),
            )
        }
        Ok(_) => Err(String::from("a cubin for CUDA 99.0 loaded").into()),
        Err(e) => Err(format!("expected Error::DriverTooOld, got: {e}").into()),
    }
}

fn stream_ops(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let s = nv.stream();
    let (me, next, prev) = ring(nv);
    let n = 777usize;
    let src = nv.alloc_from(&(0..n).map(|i| pattern(me, i, 9)).collect::<Vec<_>>())?;
    let dest = pe.poisoned::<u64>(n)?;
    let fetched = pe.poisoned::<u64>(n)?;
    let signal = nv.alloc_zeroed::<u64>(1)?;
    let to_next = nvshmem_host::Pe::new(next);
    nv.put_on_stream(s, &dest, &src, to_next)?;
    barrier(nv)?;
    let want_prev: Vec<u64> = (0..n).map(|i| pattern(prev, i, 9)).collect();
    check_eq("put_on_stream", &dest.to_vec(s)?, &want_prev)?;
    nv.get_on_stream(s, &fetched, &src, to_next)?;
    nv.synchronize(s)?;
    let want_next: Vec<u64> = (0..n).map(|i| pattern(next, i, 9)).collect();
    check_eq("get_on_stream", &fetched.to_vec(s)?, &want_next)?;
    barrier(nv)?;
    dest.fill(s, pe.poison())?;
    barrier(nv)?;
    nv.put_signal_on_stream(s, &dest, &src, &signal, 5, SignalOp::Set, to_next)?;
    let waited = nv.signal_wait_until_on_stream(s, &signal, Cmp::Eq, 5);
    match waited {
        Ok(()) => ensure(
            !nv.limited_mpg(),
            || "signal_wait_until_on_stream ran in limited MPG",
        )?,
        Err(Error::Unsupported { .. }) if nv.limited_mpg() => {}
        Err(e) => return Err(e.into()),
    }
    barrier(nv)?;
    check_eq("put_signal_on_stream (data)", &dest.to_vec(s)?, &want_prev)?;
    check_eq("put_signal_on_stream (signal)", &signal.to_vec(s)?, &[5])?;
    // Onto this PE itself: partly overlapping ranges are refused, the same
    // range (a no-op) and disjoint ranges of one buffer copy.
    let own = nvshmem_host::Pe::new(me);
    match nv.put_on_stream(s, &src.view(1..)?, &src.view(..n - 1)?, own) {
        Err(Error::InvalidArgument { reason }) => {
            ensure(reason.contains("overlap"), || reason.clone())?
        }
        other => return Err(format!("an overlapping put onto this PE gave {other:?}").into()),
    }
    nv.put_on_stream(s, &src, &src, own)?;
    nv.get_on_stream(s, &src.view(n / 2..n / 2 * 2)?, &src.view(..n / 2)?, own)?;
    nv.synchronize(s)?;
    let mut want: Vec<u64> = (0..n).map(|i| pattern(me, i, 9)).collect();
    want.copy_within(..n / 2, n / 2);
    check_eq("get_on_stream within this PE", &src.to_vec(s)?, &want)
}

/// The safe stream operations refuse a stream that is capturing a CUDA
/// graph (a replay could write into freed buffers), and work on it again
/// once the capture ends.
fn capture_refused(pe: &mut TestPe) -> TestResult {
    use nvshmem_host::cudarc::driver::sys;
    let nv = pe.nvshmem();
    let s = nv.new_stream()?;
    let buf = nv.alloc_zeroed::<u32>(64)?;
    let other = nv.alloc_zeroed::<u32>(64)?;
    let me = nv.my_pe();
    s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
        .map_err(|e| format!("begin_capture: {e}"))?;
    let refusals = [
        ("fill", buf.fill(&s, 7)),
        ("copy_from_host", buf.copy_from_host(&s, &[1; 64])),
        ("put_on_stream", nv.put_on_stream(&s, &buf, &other, me)),
    ];
    let graph = s.end_capture(sys::CUgraphInstantiate_flags(0));
    for (what, got) in refusals {
        match got {
            Err(Error::Unsupported { reason, .. }) if reason.contains("capturing") => {}
            other => return Err(format!("{what} under capture gave {other:?}").into()),
        }
    }
    // Whatever the capture holds (an empty graph) must not write the buffer.
    if let Some(g) = graph.map_err(|e| format!("end_capture: {e}"))? {
        g.launch().map_err(|e| format!("graph launch: {e}"))?;
    }
    nv.synchronize(&s)?;
    check_eq("after the captured graph", &buf.to_vec(&s)?, &[0; 64])?;
    buf.fill(&s, 7)?;
    check_eq("fill after the capture", &buf.to_vec(&s)?, &[7; 64])
}

/// Threads per block of the race tests, and elements moved (8 KiB per warp).
const RACE_THREADS: u32 = 1024;
const RACE_N: usize = 32 * 1024;
/// How long the lagging threads of the race tests wait (cycles, ~0.1 ms).
const RACE_LAG: u64 = 200_000;
/// The race tests' scopes: 1 `put_warp`/`get_warp`, 2 `put_block`/`get_block`.
const RACE_SCOPES: [(u32, &str); 2] = [(1, "warp"), (2, "block")];

/// The entry-sync race of `put_warp`/`put_block` (issue 12, section 1): each
/// thread stages its share of the source, some threads late, and the group
/// puts it with no barrier of its own. Without the group barrier before the
/// copy (which NVSHMEM's own path has), the direct copy sends the previous
/// round's values for the late threads' share.
fn staged_put(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (_, _, prev) = ring(nv);
    let stage = pe.poisoned::<u64>(RACE_N)?;
    let dest = pe.poisoned::<u64>(RACE_N)?;
    let k = pe.module(KERNELS)?.kernel("staged_put")?;
    for (scope, name) in RACE_SCOPES {
        for round in 1..=3u64 {
            let args = (
                dest.sym_ptr(),
                stage.device_ptr(),
                RACE_N as u64,
                round,
                RACE_LAG,
                scope,
            );
            // SAFETY: the block writes RACE_N elements of its own `stage` and
            // puts them to the same elements of the next PE's `dest`.
            unsafe { k.launch(nv.stream(), 1, RACE_THREADS, args)? };
            barrier(nv)?;
            let want: Vec<u64> = (0..RACE_N).map(|i| pattern(prev, i, round)).collect();
            check_eq(
                &format!("staged_put (put_{name}, round {round})"),
                &dest.to_vec(nv.stream())?,
                &want,
            )?;
            // The previous PE's next round puts into `dest`: not before it is read.
            barrier(nv)?;
        }
    }
    Ok(())
}

/// The mirror race of `get_warp`/`get_block`: each thread reads its share
/// of a local buffer, some threads late, and the group then gets the next
/// PE's data into that buffer with no barrier of its own. Without the group
/// barrier before the copy, the late threads read the new data instead of
/// the old.
fn get_in_use(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let (me, next, _) = ring(nv);
    let k = pe.module(KERNELS)?.kernel("get_in_use")?;
    for (scope, name) in RACE_SCOPES {
        for round in 1..=3u64 {
            let old: Vec<u64> = (0..RACE_N).map(|i| pattern(me, i, 100 + round)).collect();
            let local = nv.alloc_from(&old)?;
            let src = nv.alloc_from(
                &(0..RACE_N)
                    .map(|i| pattern(me, i, round))
                    .collect::<Vec<_>>(),
            )?;
            let seen = pe.poisoned::<u64>(RACE_N)?;
            let args = (
                local.device_ptr(),
                src.sym_ptr(),
                seen.device_ptr(),
                RACE_N as u64,
                RACE_LAG,
                scope,
            );
            // SAFETY: the block reads and then overwrites RACE_N elements of
            // its own `local`, writes `seen`, and reads the next PE's `src`
            // (every PE's is written: `alloc_from` returns once they are).
            unsafe { k.launch(nv.stream(), 1, RACE_THREADS, args)? };
            nv.synchronize(nv.stream())?;
            let what = format!("get_in_use (get_{name}, round {round})");
            check_eq(
                &format!("{what}: what the threads read"),
                &seen.to_vec(nv.stream())?,
                &old,
            )?;
            let want: Vec<u64> = (0..RACE_N).map(|i| pattern(next, i, round)).collect();
            check_eq(
                &format!("{what}: what the get wrote"),
                &local.to_vec(nv.stream())?,
                &want,
            )?;
            barrier(nv)?; // nobody frees `src` while a peer reads it
        }
    }
    Ok(())
}

/// Which path the typed put/get of these kernels take (`nvshmem-device`'s
/// `nvshmem-path` feature forces NVSHMEM's own): always checked, against
/// `NVSHMEM_RS_EXPECT_RMA_PATH` (`direct` or `nvshmem`; `xtask gpu-run`
/// sets it for each build of the kernels), or `direct`, the default
/// build's, when it is not set.
fn rma_path(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let out = pe.poisoned::<u32>(1)?;
    let k = pe.module(KERNELS)?.kernel("rma_path")?;
    // SAFETY: one thread writes `out[0]`.
    unsafe { k.launch(nv.stream(), 1, 1, (out.device_ptr(),))? };
    nv.synchronize(nv.stream())?;
    let (want, from) = match std::env::var("NVSHMEM_RS_EXPECT_RMA_PATH") {
        Ok(want) => (want, "NVSHMEM_RS_EXPECT_RMA_PATH"),
        Err(_) => (
            "direct".into(),
            "the default build (NVSHMEM_RS_EXPECT_RMA_PATH unset)",
        ),
    };
    checks::rma_path(out.to_vec(nv.stream())?[0], &want).map_err(|e| {
        harness::Failure::new(format!(
            "{e} (expected by {from}; kernels in {})",
            pe.ptx_dir().display()
        ))
    })
}

/// `mc_ptr` is `None` with NVLS off (as this project always runs:
/// `NVSHMEM_DISABLE_NVLS=1`, set for this test explicitly), and `ptr`
/// refuses a PE out of range. Nothing goes through either address.
fn address_queries(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    ensure(
        std::env::var("NVSHMEM_DISABLE_NVLS").as_deref() == Ok("1"),
        || "NVSHMEM_DISABLE_NVLS is not 1: this project never runs with NVLink multicast on",
    )?;
    let buf = nv.alloc_zeroed::<u32>(64)?;
    let out = pe.poisoned::<u32>(2)?;
    let k = pe.module(KERNELS)?.kernel("address_queries")?;
    // SAFETY: one thread writes `out[0..2]`; `buf` is only translated.
    unsafe { k.launch(nv.stream(), 1, 1, (buf.sym_ptr(), out.device_ptr()))? };
    nv.synchronize(nv.stream())?;
    check_eq(
        "address_queries ([mc_ptr is some, ptr(n_pes) is none])",
        &out.to_vec(nv.stream())?,
        &[0, 1],
    )
}

/// A kernel that needs more registers than a 1024-thread block allows
/// (`many_registers`): the launch is refused as `Error::BlockTooLarge` with
/// the kernel's figures, the context stays usable, and a block within the
/// limit runs and computes.
fn block_too_large(pe: &mut TestPe) -> TestResult {
    /// The kernel crate's `LIVE_SUMS`: the sums each thread writes.
    const SUMS: usize = 96;
    let nv = pe.nvshmem();
    let k = pe.module(KERNELS)?.kernel("many_registers")?;
    let registers = k.info().registers.unwrap_or(0);
    ensure(registers > 64, || {
        format!("many_registers takes {registers} registers: the test needs more than 64")
    })?;
    let (x, steps, fits) = (0.5f32, 3usize, 128usize);
    let input = nv.alloc_from(&[x; 3])?;
    let out = pe.poisoned::<f32>(1024 * SUMS)?;
    let args = (input.device_ptr(), out.device_ptr(), steps as u64);
    // SAFETY: each thread reads `input[..steps]` and writes its `SUMS`
    // floats of `out`, which holds 1024 threads' worth.
    match unsafe { k.launch(nv.stream(), 1, 1024, args) } {
        Err(Error::BlockTooLarge {
            kernel,
            threads,
            registers: r,
            max_threads,
        }) => ensure(
            kernel == "many_registers" && threads == 1024 && r == registers && max_threads < 1024,
            || {
                format!(
                    "BlockTooLarge names {kernel}, {threads} threads, {r} registers, {max_threads} at most"
                )
            },
        )?,
        other => {
            return Err(format!(
                "1024 threads of a {registers}-register kernel gave {other:?}, expected Error::BlockTooLarge"
            )
            .into());
        }
    }
    // SAFETY: as above, `fits` threads.
    unsafe { k.launch(nv.stream(), 1, fits as u32, args)? };
    nv.synchronize(nv.stream())?;
    let sums: Vec<f32> = (0..SUMS)
        .map(|j| (0..steps).fold(0f32, |s, _| s * x + j as f32))
        .collect();
    // The threads that ran wrote their sums; the refused launch wrote nothing.
    let mut want: Vec<f32> = (0..fits).flat_map(|_| sums.iter().copied()).collect();
    want.resize(1024 * SUMS, pe.poison());
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    check_eq(
        "many_registers (bits)",
        &bits(&out.to_vec(nv.stream())?),
        &bits(&want),
    )
}

/// PEs that allocate differently get `Error::AllocationMismatch`, all of
/// them, before NVSHMEM allocates, instead of buffers of different sizes at
/// one symmetric address: PE-dependent sizes (the heaps still agree after,
/// and a put shows it), then a buffer freed on one PE and another on the
/// others (the heaps differ from then on: every allocation is refused).
fn allocation_mismatch(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let me = nv.my_pe().index() as usize;
    let expect_mismatch =
        |what: &str, r: nvshmem_host::Result<nvshmem_host::SymBuffer<u64>>| match r {
            Err(Error::AllocationMismatch { detail, .. }) => {
                ensure(detail.matches("PE ").count() == nv.n_pes() as usize, || {
                    format!("{what}: the error does not list every PE: {detail}")
                })
            }
            other => {
                Err(format!("{what}: gave {other:?}, expected Error::AllocationMismatch").into())
            }
        };
    // Sizes over NVSHMEM's 256-byte granule (128..=512 bytes at 4 PEs): had
    // NVSHMEM allocated them, the heaps would differ from here on.
    expect_mismatch("sizes by PE", nv.alloc::<u64>(16 + 16 * me))?;
    // An invalid size on one PE only: refused on every PE, none left waiting.
    expect_mismatch("zero on PE 0", nv.alloc::<u64>(if me == 0 { 0 } else { 8 }))?;
    // The heaps still agree: a put lands in the next PE's buffer.
    let (s, (_, next, prev)) = (nv.stream(), ring(nv));
    let ok = nv.alloc_from(&[me as u64; 8])?;
    let got = pe.poisoned::<u64>(8)?;
    nv.put_on_stream(s, &got, &ok, nvshmem_host::Pe::new(next))?;
    barrier(nv)?;
    check_eq(
        "a put after the mismatches",
        &got.to_vec(s)?,
        &[prev as u64; 8],
    )?;
    let (a, b) = (nv.alloc::<u64>(64)?, nv.alloc::<u64>(64)?);
    // One free on every PE, of another buffer on PE 0.
    let kept = if me == 0 {
        drop(a);
        b
    } else {
        drop(b);
        a
    };
    expect_mismatch("frees by PE", nv.alloc::<u64>(64))?;
    // The other free, so that every PE freed both: in different orders, so
    // the heaps differ for good and every later allocation is refused.
    drop(kept);
    expect_mismatch("after frees in different orders", nv.alloc::<u64>(64))
}

/// A `#[repr(C)]` struct by value, as the last parameter: the kernel crate's
/// own `Affine` (its `#[derive(KernelParam)]`), through the typed bindings.
fn struct_by_value(pe: &mut TestPe) -> TestResult {
    let nv = pe.nvshmem();
    let me = nv.my_pe().index();
    let n = 1000;
    let x0: Vec<f32> = (0..n).map(|i| i as f32 + me as f32).collect();
    let x = nv.alloc_from(&x0)?;
    let k = kernels(pe)?;
    // Only the first `p.n` elements change: the struct arrived whole.
    let p = runtime_kernels::Affine {
        a: 2.0,
        b: 0.5,
        n: 900,
    };
    // SAFETY: the kernel touches the first `p.n` < n floats of `x`.
    unsafe { runtime_kernels::affine(&k, nv.stream(), 4, 256, &x, p)? };
    let want: Vec<f32> = (0..n)
        .map(|i| {
            if i < 900 {
                (2.0 * x0[i] as f64 + 0.5) as f32
            } else {
                x0[i]
            }
        })
        .collect();
    check_eq("affine", &x.to_vec(nv.stream())?, &want)
}

// A fault leaves its PE unable to join a collective teardown: 1 PE.
// NVSHMEM 3.8's proxy thread ends the process (exit status 255,
// "proxy.cpp:1773 cuda failed with an illegal memory access") as soon as it
// sees the fault, before the host can report it. With no remote transport it
// can be turned off, as for `kernel_fault` here.
gpu_main! {
    ALL => put_block, get_nbi, unaligned_bytes, staged_put, get_in_use;
    &[1] => struct_by_value;
    &[1] => rma_path;
    ALL, with &[("NVSHMEM_DISABLE_NVLS", "1")] => address_queries;
    ALL => p_and_g;
    &[1, 2] => p_and_g_from_ptx;
    ALL => atomic_fetch_add, atomic_sequence, put_signal_ring, wait_until_ring, iput, peer_ptr,
        ptr_matches_nvshmem_ptr, collective_launch, stream_ops;
    &[1], with &[("NVSHMEM_DISABLE_LOCAL_ONLY_PROXY", "1")] => kernel_fault;
    &[1] => version_mismatch, unregistrable_module, driver_too_old, block_too_large,
        capture_refused, stale_manifest;
    &[2, 4] => allocation_mismatch;
}
