//! PTX → cubin: `ptxas` on the whole module, or `ptxas -c` and `nvlink`.

use super::{ptx, transport};
use crate::builder::{AUTO_SEPARATE_ABOVE_LINES, AUTO_SEPARATE_TRANSPORT_ABOVE_LINES};
use crate::error::{Error, Result};
use crate::toolchain::{DeviceLinker, run};
use nvshmem_types::DeviceLink;
use std::collections::BTreeMap;
use std::path::Path;

/// Every kernel's register, stack and spill figures, by name.
pub(crate) type Figures = BTreeMap<String, ptx::PtxasFigures>;

/// Runs ptxas (and the device linker when compiling separately) on the PTX in
/// `ptx_path`; returns every kernel's figures, the mode used, and a warning
/// for the build's output when the result is worse than it should be.
/// `tools` is `ptxas` and the device linker, if one was found.
pub(crate) fn assemble(
    tools: (&Path, Option<DeviceLinker>),
    arch: &str,
    mode: DeviceLink,
    ptx: &str,
    ptx_path: &Path,
    cubin: &Path,
    work: &Path,
) -> Result<(Figures, DeviceLink, Option<String>)> {
    let (ptxas, nvlink) = tools;
    let funcs = ptx::ptx_functions(ptx);
    let large_transport = transport_lines(&funcs) > AUTO_SEPARATE_TRANSPORT_ABOVE_LINES;
    let mode = match mode {
        DeviceLink::Auto => {
            let largest = ptx::inlined_lines(&funcs).into_values().max().unwrap_or(0);
            if (largest > AUTO_SEPARATE_ABOVE_LINES || large_transport) && nvlink.is_some() {
                DeviceLink::Separate
            } else {
                DeviceLink::WholeProgram
            }
        }
        mode => mode,
    };
    if mode == DeviceLink::WholeProgram {
        let stderr = run("ptxas", ptxas, "", |c| {
            c.arg(format!("-arch={arch}"))
                .arg("-v")
                .arg(ptx_path)
                .arg("-o")
                .arg(cubin);
        })?;
        return Ok((ptx::ptxas_figures(&stderr), mode, None));
    }
    let nvlink = nvlink.ok_or_else(|| Error::ToolNotRunnable {
        program: ptxas.with_file_name("nvlink"),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "separate compilation needs nvlink, which was not found beside ptxas, in NVLINK \
                 or on PATH; it ships with ptxas in the {} wheel (for CUDA 12: nvJitLink, \
                 from the {} wheel)",
                crate::toolchain::wheels::NVCC_WHEEL,
                crate::toolchain::wheels::NVJITLINK_CU12_WHEEL
            ),
        ),
    })?;
    // Large NVSHMEM transport functions (3.8's) in an object of their own,
    // compiled as NVSHMEM compiles them (see `transport`); the kernels'
    // figures then cover their own code, and their registers the cap at
    // most. Small ones (3.4.5's) stay: as calls between objects they cost
    // more registers than they save (the 3.4.5 collectives crate: 116 → 168).
    let split = large_transport.then(|| transport::split(ptx)).flatten();
    let warning = (large_transport && split.is_none()).then(|| {
        format!(
            "{}: NVSHMEM's transport functions could not be split out of the PTX (it has \
             a construct the builder's PTX reader does not know), so they are compiled \
             with the kernels and add to their registers; please report it with the PTX",
            ptx_path.display()
        )
    });
    let compile = |ptx_path: &Path, object: &Path, max_registers: Option<u32>| {
        run("ptxas", ptxas, "", |c| {
            c.arg(format!("-arch={arch}")).args(["-c", "-v"]);
            if let Some(n) = max_registers {
                c.arg(format!("--maxrregcount={n}"));
            }
            c.arg(ptx_path).arg("-o").arg(object);
        })
    };
    let object = work.join("separate.o");
    let mut objects = vec![object.clone()];
    let per_function = match &split {
        None => compile(ptx_path, &object, None)?,
        Some(split) => {
            let kernels_ptx = work.join("separate-kernels.ptx");
            let transport_ptx = work.join("separate-transport.ptx");
            let transport_object = work.join("separate-transport.o");
            for (path, text) in [
                (&kernels_ptx, &split.kernels),
                (&transport_ptx, &split.transport),
            ] {
                std::fs::write(path, text).map_err(crate::error::io_err(path))?;
            }
            let (kernels, transport) = std::thread::scope(|s| {
                let t = s.spawn(|| {
                    compile(
                        &transport_ptx,
                        &transport_object,
                        Some(transport::TRANSPORT_MAX_REGISTERS),
                    )
                });
                let k = compile(&kernels_ptx, &object, None);
                (k, t.join().expect("ptxas thread"))
            });
            let kernels = kernels?;
            transport?;
            objects.push(transport_object);
            kernels
        }
    };
    let per_function = ptx::ptxas_figures(&per_function);
    let log = match &nvlink {
        DeviceLinker::Nvlink(nvlink) => run("nvlink", nvlink, "", |c| {
            c.arg(format!("-arch={arch}"))
                .arg("-v")
                .args(&objects)
                .arg("-o")
                .arg(cubin);
        })?,
        DeviceLinker::NvJitLink(lib) => {
            let objects: Vec<&Path> = objects.iter().map(|o| o.as_path()).collect();
            crate::toolchain::jitlink::link(lib, arch, &objects, cubin)?
        }
    };
    let linked = ptx::nvlink_figures(&log);
    // Per kernel: registers and stack as linked (the whole call graph);
    // spills summed over every function it reaches in its own object.
    let figures = funcs
        .iter()
        .filter(|(_, f)| f.is_entry)
        .map(|(name, _)| {
            let mut fig = ptx::PtxasFigures::default();
            for f in ptx::reachable(&funcs, name) {
                if let Some(p) = per_function.get(f) {
                    fig.spill_stores += p.spill_stores;
                    fig.spill_loads += p.spill_loads;
                }
            }
            let (registers, stack, shared) = linked.get(name).copied().unwrap_or_default();
            fig.registers = registers;
            fig.stack_frame = stack;
            fig.shared_bytes = shared;
            (name.clone(), fig)
        })
        .collect();
    Ok((figures, mode, warning))
}

/// The most PTX lines of NVSHMEM transport functions that one kernel reaches.
fn transport_lines(funcs: &BTreeMap<String, ptx::PtxFunction>) -> usize {
    funcs
        .iter()
        .filter(|(_, f)| f.is_entry)
        .map(|(name, _)| {
            ptx::reachable(funcs, name)
                .into_iter()
                .filter(|f| transport::is_transport(f))
                .map(|f| funcs[f].lines)
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0)
}
