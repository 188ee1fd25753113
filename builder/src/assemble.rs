//! PTX → cubin: `ptxas` on the whole module, or `ptxas -c` and `nvlink`.

use crate::builder::{AUTO_SEPARATE_ABOVE_LINES, DeviceLink};
use crate::error::{Error, Result};
use crate::ptx;
use crate::toolchain::{find_nvlink, run};
use std::collections::BTreeMap;
use std::path::Path;

/// Every kernel's register, stack and spill figures, by name.
pub(crate) type Figures = BTreeMap<String, ptx::PtxasFigures>;

/// Runs ptxas (and nvlink when compiling separately) on the PTX in
/// `ptx_path`; returns every kernel's figures and the mode used.
pub(crate) fn assemble(
    ptxas: &Path,
    arch: &str,
    mode: DeviceLink,
    ptx: &str,
    ptx_path: &Path,
    cubin: &Path,
    work: &Path,
) -> Result<(Figures, DeviceLink)> {
    let nvlink = find_nvlink(ptxas)?;
    let funcs = ptx::ptx_functions(ptx);
    let mode = match mode {
        DeviceLink::Auto => {
            let largest = ptx::inlined_lines(&funcs).into_values().max().unwrap_or(0);
            if largest > AUTO_SEPARATE_ABOVE_LINES && nvlink.is_some() {
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
        return Ok((ptx::ptxas_figures(&stderr), mode));
    }
    let nvlink = nvlink.ok_or_else(|| Error::ToolNotRunnable {
        program: ptxas.with_file_name("nvlink"),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "separate compilation needs nvlink, which was not found beside ptxas, in NVLINK \
                 or on PATH; it ships with ptxas in the {} wheel",
                crate::toolchain::NVCC_WHEEL
            ),
        ),
    })?;
    let object = work.join("separate.o");
    let per_function = ptx::ptxas_figures(&run("ptxas", ptxas, "", |c| {
        c.arg(format!("-arch={arch}"))
            .args(["-c", "-v"])
            .arg(ptx_path)
            .arg("-o")
            .arg(&object);
    })?);
    let linked = ptx::nvlink_figures(&run("nvlink", &nvlink, "", |c| {
        c.arg(format!("-arch={arch}"))
            .arg("-v")
            .arg(&object)
            .arg("-o")
            .arg(cubin);
    })?);
    // Per kernel: registers and stack as linked (the whole call graph);
    // spills summed over every function it reaches.
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
    Ok((figures, mode))
}
