//! GPU smoke test of modules and launches without the kernel builder: loads
//! hand-written PTX (`examples/ptx/plain_kernels.ptx`, no NVSHMEM code, so it
//! loads unregistered) with a manifest made here, and checks launches,
//! argument checks, the collective launch path and kernel-fault reporting.
//! Prints a PASS/FAIL table; exits non-zero on any failure.
//!
//!     cargo run -p nvshmem-host --example host_ptx_smoke
//!
//! The planted fault ends the CUDA context, so it runs last.

use nvshmem_host::{
    Arch, DevicePtr, Error, KernelInfo, LaunchConfig, Manifest, Nvshmem, ParamInfo, Version,
};
use std::process::ExitCode;

const PTX: &[u8] = include_bytes!("ptx/plain_kernels.ptx");

fn param(name: &str, rust_type: &str, size: u32) -> ParamInfo {
    ParamInfo {
        name: name.into(),
        rust_type: rust_type.into(),
        c_type: String::new(),
        size,
        align: size,
    }
}

fn manifest(nvshmem_version: Version) -> Manifest {
    let fill = || {
        vec![
            param("dst", "DevicePtr<u32>", 8),
            param("n", "u32", 4),
            param("v", "u32", 4),
        ]
    };
    Manifest {
        format: nvshmem_host::MANIFEST_FORMAT,
        crate_name: "plain_kernels".into(),
        nvshmem_version,
        // The PTX targets sm_70; the oldest architecture CUDA 13 runs.
        arch: Arch::new(75).expect("sm_75 is supported"),
        ptx_isa: "7.0".into(),
        ptx: "plain_kernels.ptx".into(),
        cubin: None,
        device_link: None,
        cuda_toolkit: None,
        kernels: vec![
            KernelInfo::new("fill_u32", fill(), false),
            KernelInfo::new("fill_u32_collective", fill(), true),
            KernelInfo::new("store_to", vec![param("addr", "DevicePtr<u32>", 8)], false),
        ],
    }
}

struct Table {
    pe: u32,
    failed: usize,
}

impl Table {
    fn row(&mut self, name: &str, result: Result<String, String>) {
        let (status, detail) = match result {
            Ok(d) => ("PASS", d),
            Err(d) => {
                self.failed += 1;
                ("FAIL", d)
            }
        };
        println!("PE {} | {status} | {name:<40} | {detail}", self.pe);
    }
}

fn main() -> ExitCode {
    let nv = match Nvshmem::init() {
        Ok(nv) => nv,
        Err(e) => {
            println!("FAIL | {:<40} | {e}", "init");
            return ExitCode::FAILURE;
        }
    };
    let mut table = Table {
        pe: nv.my_pe().index(),
        failed: 0,
    };
    let mut row = |name: &str, result: Result<String, String>| table.row(name, result);
    let expect = |r: Result<(), Error>, want: fn(&Error) -> bool| match r {
        Err(e) if want(&e) => Ok(e.to_string()),
        other => Err(format!("{other:?}")),
    };
    let stream = nv.stream().clone();
    let module = match nv.load_module_image(PTX, manifest(nv.version())) {
        Ok(m) => m,
        Err(e) => {
            println!("FAIL | {:<40} | {e}", "load_module_image");
            return ExitCode::FAILURE;
        }
    };
    row(
        "load plain PTX (unregistered)",
        if module.is_registered() {
            Err("registered".into())
        } else {
            Ok(format!("{module:?}"))
        },
    );
    let n = 10_000u32;
    let buf = nv.alloc_zeroed::<u32>(n as usize).expect("alloc");
    let dst = buf.device_ptr();
    let (fill, coop, store) = (
        module.kernel("fill_u32").expect("fill_u32"),
        module
            .kernel("fill_u32_collective")
            .expect("fill_u32_collective"),
        module.kernel("store_to").expect("store_to"),
    );

    // SAFETY (all launches below): the fill kernels write `n` u32s at `dst`,
    // which holds `n`.
    let plain = (|| -> Result<bool, Error> {
        unsafe { fill.launch_with(&stream, LaunchConfig::for_elements(n, 256), (dst, n, 7u32))? };
        nv.synchronize(&stream)?;
        Ok(buf.to_vec(&stream)?.iter().all(|&x| x == 7))
    })();
    row(
        "launch",
        match plain {
            Ok(true) => Ok(format!("{n} x 7")),
            other => Err(format!("{other:?}")),
        },
    );
    row(
        "wrong argument type is ArgumentMismatch",
        expect(
            unsafe { fill.launch(&stream, 1, 32, (dst, n as u64, 7u32)) },
            |e| matches!(e, Error::ArgumentMismatch { .. }),
        ),
    );
    row(
        "missing argument is ArgumentMismatch",
        expect(unsafe { fill.launch(&stream, 1, 32, (dst, n)) }, |e| {
            matches!(e, Error::ArgumentMismatch { .. })
        }),
    );
    row(
        "plain launch of a collective kernel refused",
        expect(
            unsafe { coop.launch(&stream, 1, 32, (dst, n, 1u32)) },
            |e| matches!(e, Error::CollectiveLaunchRequired { .. }),
        ),
    );
    let max = coop.max_collective_blocks(256, 0);
    row(
        "max_collective_blocks(256)",
        max.as_ref()
            .map(|m| m.to_string())
            .map_err(|e| e.to_string()),
    );
    let collective = (|| -> Result<bool, Error> {
        let blocks = n.div_ceil(256).min(coop.max_collective_blocks(256, 0)?);
        unsafe { coop.launch_collective(&stream, blocks, 256, (dst, blocks * 256, 9u32))? };
        nv.synchronize(&stream)?;
        Ok(buf.to_vec(&stream)?[..(blocks * 256).min(n) as usize]
            .iter()
            .all(|&x| x == 9))
    })();
    row(
        "cooperative launch",
        match collective {
            Ok(true) => Ok("all co-resident blocks wrote".into()),
            other => Err(format!("{other:?}")),
        },
    );
    if let Ok(max) = max {
        row(
            "grid too large for a collective launch",
            expect(
                unsafe { coop.launch_collective(&stream, max + 1, 256, (dst, n, 1u32)) },
                |e| matches!(e, Error::GridTooLarge { .. }),
            ),
        );
    }
    row(
        "unknown kernel is KernelNotFound",
        module
            .kernel("missing")
            .map(|_| "found?".to_string())
            .or_else(|e| match e {
                Error::KernelNotFound { .. } => Ok(e.to_string()),
                other => Err(other.to_string()),
            }),
    );

    // Last: a planted illegal address, reported naming the kernel.
    let faulted = (|| -> Result<(), Error> {
        unsafe { store.launch(&stream, 1, 1, (DevicePtr::<u32>::new(0x10),))? };
        nv.synchronize(&stream)
    })();
    row(
        "kernel fault names the kernel",
        match faulted {
            Err(Error::KernelFault { ref kernel, .. }) if kernel == "store_to" => {
                Ok(faulted.unwrap_err().to_string())
            }
            other => Err(format!("{other:?}")),
        },
    );
    drop((fill, coop, store, module, buf));
    row(
        "finalize after a fault reports it",
        match nv.finalize() {
            Err(Error::KernelFault { .. }) => Ok("KernelFault (teardown skipped)".into()),
            other => Err(format!("{other:?}")),
        },
    );
    println!("PE {} | {} failed", table.pe, table.failed);
    if table.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
