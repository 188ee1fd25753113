//! `xtask gpu-run [MODE...]`: a pack's GPU suites, on the GPU machine, from the
//! pack (`.gpu-<purpose>/bin/xtask`). Logs go to `$OUT` (default
//! `/tmp/gpu-out`); a PASS/FAIL/SKIPPED table comes last.
//!
//! Without a GPU every mode still runs as far as it can (programs start,
//! find no GPU and say so): those rows read SKIPPED, never PASS. A run that
//! passed some parts and skipped others reads `PASS (N skipped: reason)`;
//! one that printed neither marker reads UNCHECKED (see [`verdict`]).

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::rc::Rc;
use std::time::Instant;

/// One group of runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The GPU, the driver, NVSHMEM and the pack.
    Info,
    /// tests/gpu.rs at 1 and 2 PEs without MPS, then at 1, 2 and 4 under MPS.
    Tests,
    /// tests/compute.rs (1 PE).
    Compute,
    /// tests/tensor.rs: the tensor-core primitives and GEMMs (1 PE).
    Tensor,
    /// bf16 GEMM against cuBLAS at 1 PE, then the fused cases at 2 PEs under MPS (CSV and plots in $OUT).
    Gemm,
    /// The mma and wgmma GEMMs at 4096 and 8192, 1 PE, with the grouped tile order's band height 4, 8, 16, 32 and 64 tile rows (compute or perf pack; `gemm-group<G>.csv` in $OUT; not a default).
    GemmGroups,
    /// The mma and wgmma GEMMs at 4096, then at 8192, 1 PE, each while `nvidia-smi` samples the SM clock, power, temperature and clock-event reasons every 100 ms (`gemm-clocks-<size>.csv` in $OUT; the table gives their median and extremes): whether the timed loop at 8192 runs at a lower clock (compute or perf pack; not a default).
    GemmClocks,
    /// The fused AG+GEMM and GEMM+RS examples at 1 PE, then at 2 and 4 under MPS.
    Fused,
    /// tests/collectives.rs under MPS.
    Collectives,
    /// The benchmark's correctness check under MPS.
    BenchCheck,
    /// The ring, the all-reduce and AG+GEMM at 1 PE, then at 2 and 4 under MPS.
    Examples,
    /// The runtime's own costs: init, module load, launch.
    Costs,
    /// tests/gpu.rs on runtime kernels with NVSHMEM's own RMA path forced.
    NvshmemPath,
    /// tests/gpu.rs on runtime kernels compiled separately (ptxas -c + nvlink).
    Separate,
    /// The ring, the all-reduce and tests/gpu.rs under `mpirun -n 2` and `-n 4` (Open MPI from the pack).
    Mpirun,
    /// tests/gpu.rs against NVSHMEM 3.8.0 (from the pack).
    Nvshmem38,
    /// A `gpu-pack nvshmem` pack's release: tests/gpu.rs at 1 and 2 PEs without MPS and at 1, 2
    /// and 4 under MPS (the driver-version error test among them), then tests/collectives.rs under MPS.
    Release,
    /// Release's last part alone, tests/collectives.rs under MPS (to finish a call cut short; not a default).
    ReleaseCollectives,
    /// tests/gpu.rs at 2 and 4 PEs over NVSHMEM 3.8.0's UCX transport, P2P off (SKIPPED without GDRCopy or driver R610+: the proxy's AMOs need them).
    Ucx,
    /// compute-sanitizer's memcheck and racecheck at 2 PEs, without MPS, on the examples the pack has: the ring, the all-reduce and AG+GEMM (tests pack; AG+GEMM at 256³ under racecheck), the MoE layer (moe pack); not a default.
    Sanitizer,
    /// examples/cpp_host built with this machine's nvcc against the pack's kernels, run on 1 and 2 PEs (not a default).
    CppHost,
    /// The benchmark: the C++ twins built with this machine's nvcc, SASS, 1 and 2 PEs; results in $OUT/bench (not a default).
    Bench,
    /// Issue 24's one run, in its priority order within 470 s: the benchmark with every candidate build at 1 and 2 PEs, the mma GEMM candidates against cuBLAS, runtime costs (raw launch rows), init against C++, then the benchmark again (the spread); CSVs and perf-summary.md in $OUT, logs in $OUT/perf-logs-all.tar.xz.
    Perf,
    /// Thread-scope put/get under Nsight Compute at 1 PE, Rust and C++, 4 launches a row (a check, a warm-up, 2 timed) (`--ncu`; `ncu-pe1.ncu-rep`, `ncu-pe1.csv` and `ncu-pe1-raw.csv` in $OUT/profile; not a default).
    Profile,
    /// `gemm_bf16_mma`, `gemm_bf16_mma_k64` and `gemm_bf16_wgmma` at 4096 and 8192 under Nsight Compute, 1 PE (pipes, occupancy, stall reasons; `ncu-gemm.ncu-rep`, `ncu-gemm.csv` and `ncu-gemm-raw.csv` in $OUT/profile-gemm; compute or perf pack; not a default).
    ProfileGemm,
    /// Perf's benchmark half: 1 and 2 PEs, twice (for two calls when one does not fit).
    PerfA,
    /// Perf's other half: GEMM candidates, runtime costs, init against C++ (not a default).
    PerfB,
    /// The MoE tests (examples/moe/tests) at 1 and 2 PEs without MPS, then at 1, 2 and 4 under MPS.
    MoeTests,
    /// The MoE layer example (dispatch, grouped GEMM, combine) at 1 PE, then at 2 and 4 under MPS.
    MoeExample,
    /// `nvshmem-bench moe` at 1 PE, then at 2 and 4 under MPS (CSVs in $OUT).
    MoeBench,
    /// The Python package on this machine's PyTorch: pytest in one process, the launch-overhead benchmark, memcheck of that pytest, then under torchrun with 2 ranks under MPS pytest (graph capture, version mismatch) and the torch example.
    Torch,
}

impl Mode {
    /// The modes a pack of this purpose runs by default.
    fn defaults(purpose: &str) -> &'static [Mode] {
        use Mode::*;
        match purpose {
            "tests" => &[Info, Tests, Collectives, BenchCheck, Examples, Costs],
            "compute" => &[Info, Compute, Tensor, Fused, Gemm],
            "variants" => &[Info, NvshmemPath, Separate],
            "mpi" => &[Info, Mpirun],
            "nvshmem38" => &[Info, Nvshmem38, Ucx],
            "perf" => &[Info, Perf],
            "nvshmem" => &[Info, Release],
            "moe" => &[Info, MoeTests, MoeExample, MoeBench],
            "torch" => &[Info, Torch],
            _ => &[Info],
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The modes to run (default: every mode of the pack's purpose).
    #[arg(value_enum)]
    modes: Vec<Mode>,
    /// The pack (default: the folder above this program's bin/); a relative
    /// path is relative to the current folder.
    #[arg(long)]
    pack: Option<PathBuf>,
    /// Runs only the steps whose name contains this text (a summary row's
    /// name, such as `racecheck-ag_gemm`); the others are listed as not run.
    #[arg(long)]
    only: Option<String>,
}

/// The settings every program here starts with. NVLink multicast stays off.
pub(crate) const BASE_ENV: &[(&str, &str)] = &[
    ("NVSHMEM_DISABLE_NVLS", "1"),
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_REMOTE_TRANSPORT", "none"),
    ("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo"),
];

struct Runner {
    pack: PathBuf,
    out: PathBuf,
    gpu: bool,
    /// CUDA MPS for the steps of an [`MpsScope`]: started at the first that
    /// runs, so a scope whose steps `--only` leaves out starts nothing.
    mps: Rc<MpsState>,
    table: Vec<(String, String)>,
    /// A `nvshmem` pack's release: `(version, CUDA major)` as written in `PACK`.
    release: Option<(String, String)>,
    /// `--only`: the text a step's name must contain to run.
    only: Option<String>,
    /// The steps `--only` left out.
    not_selected: Vec<String>,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let pack = match args.pack {
        // The runs start in other folders (`xtask` in the pack's src/).
        Some(p) => std::path::absolute(&p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => std::env::current_exe()
            .map_err(|e| e.to_string())?
            .parent()
            .and_then(Path::parent)
            .ok_or("this program is not in a pack's bin/")?
            .to_path_buf(),
    };
    let purpose = std::fs::read_to_string(pack.join("PACK"))
        .map_err(|e| format!("{} is not a pack (no PACK file): {e}", pack.display()))?;
    let words: Vec<&str> = purpose.split_whitespace().collect();
    let release = match words.as_slice() {
        ["nvshmem", v, c, ..] => Some((v.to_string(), c.to_string())),
        _ => None,
    };
    let purpose = words.first().copied().unwrap_or_default().to_string();
    let modes = if args.modes.is_empty() {
        Mode::defaults(&purpose).to_vec()
    } else {
        args.modes
    };
    let out = std::env::var_os("OUT").map_or_else(|| PathBuf::from("/tmp/gpu-out"), PathBuf::from);
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let gpu = gpu_present();
    let mut r = Runner {
        pack,
        out,
        gpu,
        mps: Rc::default(),
        table: Vec::new(),
        release,
        only: args.only,
        not_selected: Vec::new(),
    };
    if !gpu {
        println!(
            "no GPU here (nvidia-smi lists none): every mode runs as far as it can, and reads SKIPPED"
        );
    }
    r.unpack_binaries()?;
    for mode in modes {
        // A mode that cannot even start is a FAIL row: the table still prints.
        if let Err(e) = r.mode(mode) {
            println!("    FAIL: {e}");
            r.table.push((format!("{mode:?}"), format!("FAIL ({e})")));
        }
    }
    println!("\n=== summary ({purpose} pack)");
    let mut failed = false;
    for (name, verdict) in &r.table {
        println!("{name:<36} {verdict}");
        failed |= verdict.starts_with("FAIL");
    }
    if let Some(only) = &r.only {
        println!(
            "NOT RUN ({} steps without `{only}` in their name): {}",
            r.not_selected.len(),
            r.not_selected.join(", ")
        );
        if r.table.is_empty() {
            println!("FAIL: --only {only} selected no step");
            failed = true;
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

impl Runner {
    /// Unpacks the pack's xz-compressed programs (the tests and MoE packs'), once.
    fn unpack_binaries(&self) -> Result<(), String> {
        let dir = self.pack.join("bin");
        for f in std::fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .flatten()
        {
            let path = f.path();
            if path.extension().is_some_and(|e| e == "xz") && !path.with_extension("").exists() {
                crate::check(Command::new("xz").arg("-dk").arg(&path))?;
            }
        }
        Ok(())
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.pack.join("bin").join(name)
    }

    fn ptx(&self, folder: &str, version: &str) -> PathBuf {
        self.pack.join(folder).join(format!(
            "nvshmem-{version}/{}",
            nvshmem_builder::Arch::DEFAULT
        ))
    }

    /// A command with the base settings, the pack's kernels and, with a GPU,
    /// `NVSHMEM_RS_REQUIRE_GPU=1`.
    fn command(&self, program: &Path, ptx: &Path) -> Command {
        let mut c = Command::new(program);
        self.settings(&mut c, ptx);
        c
    }

    /// [`Runner::command`]'s settings, on a command that starts something else
    /// first (a profiler).
    fn settings(&self, c: &mut Command, ptx: &Path) {
        c.envs(BASE_ENV.iter().copied())
            .env("NVSHMEM_RS_PTX_DIR", ptx)
            .env("MOE_PTX_DIR", ptx)
            .env("OUT", &self.out);
        if self.gpu {
            c.env("NVSHMEM_RS_REQUIRE_GPU", "1");
        }
        if self.mps.wanted.get() {
            c.envs(Mps::env());
        }
    }

    fn mode(&mut self, mode: Mode) -> Result<(), String> {
        let ptx = self.ptx("ptx", "3.4.5");
        let test_gpu = self.bin("test-gpu");
        match mode {
            Mode::Info => {
                let mut info = String::new();
                if let Ok(o) = Command::new("nvidia-smi")
                    .args(["--query-gpu=name,driver_version,memory.total,clocks.sm"])
                    .arg("--format=csv")
                    .output()
                {
                    info += &String::from_utf8_lossy(&o.stdout);
                }
                info += &format!(
                    "pack {} ({})\n",
                    self.pack.display(),
                    std::fs::read_to_string(self.pack.join("PACK"))
                        .unwrap_or_default()
                        .trim()
                );
                print!("{info}");
                let _ = std::fs::write(self.out.join("machine.txt"), info);
            }
            Mode::Tests => {
                // Without MPS, 4 PEs skip for want of it: no REQUIRE_GPU there.
                let mut c = self.command(&test_gpu, &ptx);
                c.env_remove("NVSHMEM_RS_REQUIRE_GPU")
                    .env("NVSHMEM_RS_EXPECT_RMA_PATH", "direct");
                self.record("gpu-no-mps", c);
                let _mps = self.mps();
                let mut c = self.command(&test_gpu, &ptx);
                c.env("NVSHMEM_RS_EXPECT_RMA_PATH", "direct");
                self.record("gpu-mps", c);
            }
            Mode::Compute => {
                let c = self.command(&self.bin("test-compute"), &ptx);
                self.record("compute", c);
            }
            Mode::Tensor => {
                let c = self.command(&self.bin("test-tensor"), &ptx);
                self.record("tensor", c);
            }
            Mode::Gemm => {
                let bench = self.bin("nvshmem-bench");
                let mut c = self.gemm_bench(&ptx, &[], "gemm-pe1.csv");
                c.arg("--plots").arg(self.out.join("gemm-pe1"));
                self.record("gemm-1", c);
                let _mps = self.mps();
                let mut c = self.command(&self.bin("nvshmem-run"), &ptx);
                c.env("LD_LIBRARY_PATH", with_cublas())
                    .args(["-n", "2", "--timeout", "500", "--"])
                    .arg(&bench)
                    .args(["gemm", "--sizes", "2048,4096,8192", "--csv"])
                    .arg(self.out.join("gemm-pe2.csv"))
                    .arg("--plots")
                    .arg(self.out.join("gemm-pe2"));
                self.record("gemm-2-mps", c);
            }
            Mode::GemmGroups => {
                for group in ["4", "8", "16", "32", "64"] {
                    let args = ["--sizes", "4096,8192", "--no-fused", "--group", group];
                    let c = self.gemm_bench(&ptx, &args, &format!("gemm-group{group}.csv"));
                    self.record(&format!("gemm-group{group}-1"), c);
                }
            }
            Mode::GemmClocks => {
                for size in ["4096", "8192"] {
                    if !self.selected(&format!("gemm-{size}-1")) {
                        continue;
                    }
                    let samples = self.out.join(format!("gemm-clocks-{size}.csv"));
                    let sampler = ClockSampler::start(&samples);
                    let args = ["--sizes", size, "--no-fused", "--no-cublas"];
                    let c = self.gemm_bench(&ptx, &args, &format!("gemm-{size}.csv"));
                    self.record(&format!("gemm-{size}-1"), c);
                    let summary = sampler.stop();
                    self.table.push((format!("gemm-clocks-{size}"), summary));
                }
            }
            Mode::Fused => {
                for name in ["ag_gemm", "gemm_rs"] {
                    let c = self.command(&self.bin(name), &ptx);
                    self.record(&format!("{name}-1"), c);
                }
                let _mps = self.mps();
                for n in ["2", "4"] {
                    for name in ["ag_gemm", "gemm_rs"] {
                        let mut c = self.command(&self.bin("nvshmem-run"), &ptx);
                        c.args(["-n", n, "--timeout", "300", "--"])
                            .arg(self.bin(name))
                            .args(["--iters", "5"]);
                        self.record(&format!("{name}-{n}-mps"), c);
                    }
                }
            }
            Mode::Collectives => {
                let _mps = self.mps();
                let mut c = self.command(&self.bin("test-collectives"), &ptx);
                c.env("NVSHMEM_RS_TEST_TIMEOUT", "300");
                self.record("collectives-mps", c);
            }
            Mode::BenchCheck => {
                let _mps = self.mps();
                // The bench's own kernels have their own folder variable.
                let mut c = self.command(&self.bin("test-bench_check"), &ptx);
                c.env("NVSHMEM_RS_BENCH_PTX_DIR", self.ptx("ptx-bench", "3.4.5"));
                self.record("bench-check-mps", c);
            }
            Mode::Examples => {
                for (name, args) in EXAMPLES {
                    let mut c = self.command(&self.bin(name), &ptx);
                    c.args(*args);
                    self.record(&format!("{name}-1"), c);
                }
                let _mps = self.mps();
                for n in ["2", "4"] {
                    for (name, args) in &EXAMPLES[..2] {
                        let mut c = self.command(&self.bin("nvshmem-run"), &ptx);
                        c.args(["-n", n, "--timeout", "200", "--"])
                            .arg(self.bin(name))
                            .args(*args);
                        self.record(&format!("{name}-{n}"), c);
                    }
                }
            }
            Mode::Sanitizer => {
                if crate::nvcc::on_path("compute-sanitizer").is_none() {
                    self.skip("sanitizer", NO_SANITIZER);
                    return Ok(());
                }
                for tool in ["memcheck", "racecheck"] {
                    for (name, args) in EXAMPLES.iter().chain(MOE_EXAMPLE) {
                        let step = format!("{tool}-{name}-2");
                        if !self.bin(name).exists() {
                            let why =
                                format!("{name} is not in this pack (the moe pack has moe_layer)");
                            self.skip(&step, &why);
                            continue;
                        }
                        let mut c = self.command(&self.bin("nvshmem-run"), &ptx);
                        // NVSHMEM's own CUDA calls that are expected to fail
                        // (probes) are not errors of the program.
                        c.args(["-n", "2", "--timeout", "300", "--", "compute-sanitizer"])
                            .args(["--tool", tool, "--error-exitcode", "1"])
                            .args(["--report-api-errors", "no"])
                            .arg(self.bin(name))
                            .args(*args);
                        if tool == "racecheck" {
                            c.args(racecheck_size(name));
                        }
                        self.record(&step, c);
                    }
                }
            }
            Mode::Costs => {
                let costs = self.bin("runtime_costs");
                let mut c = self.command(&costs, &ptx);
                c.env("CUDA_CACHE_DISABLE", "1");
                self.record("costs-1", c);
                let _mps = self.mps();
                for n in ["2", "4"] {
                    let mut c = self.command(&self.bin("nvshmem-run"), &ptx);
                    c.env("CUDA_CACHE_DISABLE", "1")
                        .args(["-n", n, "--timeout", "200", "--"])
                        .arg(&costs);
                    self.record(&format!("costs-{n}-mps"), c);
                }
            }
            Mode::Torch => self.torch()?,
            Mode::NvshmemPath | Mode::Separate => {
                let (name, folder) = match mode {
                    Mode::NvshmemPath => ("gpu-nvshmem-path-mps", "ptx-nvshmem-path"),
                    _ => ("gpu-separate-mps", "ptx-separate"),
                };
                let _mps = self.mps();
                let mut c = self.command(&test_gpu, &self.ptx(folder, "3.4.5"));
                if mode == Mode::NvshmemPath {
                    c.env("NVSHMEM_RS_EXPECT_RMA_PATH", "nvshmem");
                }
                self.record(name, c);
            }
            Mode::Mpirun => {
                let _mps = self.mps();
                for n in ["2", "4"] {
                    let programs: [(&str, PathBuf, &[&str]); 3] = [
                        ("ring", self.bin("ring"), &[]),
                        ("allreduce", self.bin("allreduce"), &["--quick"]),
                        ("gpu-tests", test_gpu.clone(), &[]),
                    ];
                    for (name, program, args) in programs {
                        let c = self.mpirun(n, &program, args, &ptx);
                        self.record(&format!("mpirun-{n}-{name}"), c);
                    }
                }
            }
            Mode::CppHost => {
                let mut c = self.xtask("cpp-host");
                c.arg("--ptx-dir")
                    .arg(&ptx)
                    .arg("--launcher")
                    .arg(self.bin("nvshmem-run"))
                    .arg("--out")
                    .arg(self.out.join("cpp_host"));
                self.record("cpp-host", c);
            }
            Mode::Bench => {
                let c = self.bench(&ptx, &self.out.join("bench"));
                self.record("bench", c);
            }
            Mode::Profile => {
                let mut c = self.bench(&ptx, &self.out.join("profile"));
                c.args(["--pes", "1", "--no-lto", "--no-plots", "--timeout", "240"])
                    .args(["--ncu", "^bw_(put|get)_thread$"])
                    .args(["--", "--no-nccl", "--quick", "--only", "put_bw,get_bw"])
                    .args(["--reps", "2", "--warmup", "1"]);
                self.record("profile-thread-1", c);
            }
            Mode::Perf => self.perf(&ptx, Perf::All)?,
            Mode::ProfileGemm => self.profile_gemm(&ptx)?,
            Mode::PerfA => self.perf(&ptx, Perf::Bench)?,
            Mode::PerfB => self.perf(&ptx, Perf::Rest)?,
            Mode::Release | Mode::ReleaseCollectives => {
                let Some((v, c)) = self.release.clone() else {
                    return Err(
                        "modes release and release-collectives need a `gpu-pack nvshmem` pack"
                            .into(),
                    );
                };
                let nv = self.unpack_host()?;
                unpack_cubins(&self.pack.join("ptx"))?;
                let folder = match c.as_str() {
                    "12" => format!("nvshmem-{v}-cu12"),
                    _ => format!("nvshmem-{v}"),
                };
                let ptx = self
                    .pack
                    .join("ptx")
                    .join(folder)
                    .join(nvshmem_builder::Arch::DEFAULT.to_string());
                let name = format!("{v}-cu{c}");
                if mode == Mode::Release {
                    let mut c = self.command(&test_gpu, &ptx);
                    c.env_remove("NVSHMEM_RS_REQUIRE_GPU")
                        .env("NVSHMEM_HOME", &nv);
                    self.record(&format!("gpu-{name}-no-mps"), c);
                }
                let _mps = self.mps();
                if mode == Mode::Release {
                    let mut c = self.command(&test_gpu, &ptx);
                    c.env("NVSHMEM_HOME", &nv);
                    self.record(&format!("gpu-{name}-mps"), c);
                }
                let mut c = self.command(&self.bin("test-collectives"), &ptx);
                c.env("NVSHMEM_HOME", &nv)
                    .env("NVSHMEM_RS_TEST_TIMEOUT", "300");
                self.record(&format!("collectives-{name}-mps"), c);
            }
            Mode::MoeTests => {
                let test = self.bin("test-moe");
                // Without MPS, 4 PEs skip for want of it: no REQUIRE_GPU there.
                let mut c = self.command(&test, &ptx);
                c.env_remove("NVSHMEM_RS_REQUIRE_GPU");
                self.record("moe-tests-no-mps", c);
                let _mps = self.mps();
                let c = self.command(&test, &ptx);
                self.record("moe-tests-mps", c);
            }
            Mode::MoeExample => {
                let c = self.command(&self.bin("moe_layer"), &ptx);
                self.record("moe-example-1", c);
                let _mps = self.mps();
                for n in ["2", "4"] {
                    let mut c = self.command(&self.bin("nvshmem-run"), &ptx);
                    c.args(["-n", n, "--timeout", "300", "--"])
                        .arg(self.bin("moe_layer"));
                    self.record(&format!("moe-example-{n}-mps"), c);
                }
            }
            Mode::MoeBench => {
                let bench = self.bin("nvshmem-bench");
                let out = self.out.clone();
                let csv = |n: &str| out.join(format!("moe-pe{n}.csv"));
                let mut c = self.command(&bench, &ptx);
                c.args(["moe", "--csv"]).arg(csv("1"));
                self.record("moe-bench-1", c);
                let _mps = self.mps();
                for n in ["2", "4"] {
                    let mut c = self.command(&self.bin("nvshmem-run"), &ptx);
                    c.args(["-n", n, "--timeout", "500", "--"])
                        .arg(&bench)
                        .args(["moe", "--csv"])
                        .arg(csv(n));
                    self.record(&format!("moe-bench-{n}-mps"), c);
                }
            }
            Mode::Nvshmem38 | Mode::Ucx => {
                let nv = self.unpack_host()?;
                let ptx38 = self.ptx("ptx", "3.8.0");
                if mode == Mode::Ucx
                    && self.gpu
                    && let Some(why) = no_gpu_cpu_mapping()
                {
                    // NVSHMEM's proxy aborts the first AMO and the PEs hang
                    // (seen on the H200): say why instead.
                    self.skip("gpu-3.8.0-ucx-mps", &why);
                    return Ok(());
                }
                let _mps = self.mps();
                let mut c = self.command(&test_gpu, &ptx38);
                c.env("NVSHMEM_HOME", &nv);
                if mode == Mode::Nvshmem38 {
                    self.record("gpu-3.8.0-mps", c);
                } else {
                    // P2P off, so every peer goes through NVSHMEM's proxy and UCX.
                    let ucx = self.pack.join("ucx/lib");
                    c.env("NVSHMEM_DISABLE_P2P", "1")
                        .env("NVSHMEM_REMOTE_TRANSPORT", "ucx")
                        .env("NVSHMEM_UCX_TLS", "tcp,self,cuda_copy")
                        .env("UCX_NET_DEVICES", "lo")
                        .env("NVSHMEM_GDRCOPY_USE_INTERNAL_DMABUF", "1")
                        .env("LD_LIBRARY_PATH", prepend(&ucx));
                    self.record("gpu-3.8.0-ucx-mps", c);
                }
            }
        }
        Ok(())
    }

    /// `nvshmem-bench gemm ARGS --csv $OUT/CSV` at 1 PE, with cuBLAS on the
    /// library path.
    fn gemm_bench(&self, ptx: &Path, args: &[&str], csv: &str) -> Command {
        let mut c = self.command(&self.bin("nvshmem-bench"), ptx);
        c.env("LD_LIBRARY_PATH", with_cublas())
            .arg("gemm")
            .args(args)
            .arg("--csv")
            .arg(self.out.join(csv));
        c
    }

    /// [`Mode::ProfileGemm`]: the mma, mma_k64 and wgmma GEMMs under ncu, then
    /// the report as CSV.
    fn profile_gemm(&mut self, ptx: &Path) -> Result<(), String> {
        let name = "profile-gemm-1";
        if !self.selected(name) {
            return Ok(());
        }
        if !self.gpu {
            self.skip(name, "no GPU");
            return Ok(());
        }
        if let Err(why) = crate::ncu::on_path() {
            self.table.push((name.into(), format!("FAIL ({why})")));
            return Ok(());
        }
        let dir = self.out.join("profile-gemm");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let report = dir.join("ncu-gemm");
        let mut c = crate::ncu::run(
            // mma_k64 (BK 64) beside mma (BK 32): whether cp.async's
            // 8 shared wavefronts per instruction follow the half-used lines.
            "^gemm_bf16_(mma|mma_k64|wgmma)$",
            crate::ncu::GEMM_SECTIONS,
            &report,
            &self.bin("nvshmem-bench"),
            300,
        );
        self.settings(&mut c, ptx);
        c.env("LD_LIBRARY_PATH", with_cublas()).args([
            "gemm",
            "--sizes",
            "4096,8192",
            "--no-fused",
            "--no-cublas",
            "--candidates",
            "--reps",
            "1",
            "--warmup",
            "0",
        ]);
        self.record(name, c);
        if let Err(e) = crate::ncu::export(&report) {
            self.table
                .push(("profile-gemm-export".into(), format!("FAIL ({e})")));
        }
        Ok(())
    }

    /// [`Mode::Perf`], [`Mode::PerfA`], [`Mode::PerfB`]: the steps of `parts`
    /// in issue 24's priority order, within [`PERF_BUDGET`] seconds: each
    /// step under `timeout` (its cap or what is left of the budget), a step
    /// that no longer fits SKIPPED. Every step logs into a work folder (a
    /// device call brings back only 8 files); the CSVs and the summary go to
    /// `$OUT` as each step ends, the logs as one archive at the end.
    fn perf(&mut self, ptx: &Path, parts: Perf) -> Result<(), String> {
        let t0 = Instant::now();
        let out = self.out.clone();
        let work = std::env::temp_dir().join("nvshmem-rs-perf");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        self.out = work.clone();
        let keep = |from: &str, to: &str| {
            let _ = std::fs::copy(work.join(from), out.join(to));
        };
        // The benchmark with every candidate at `pes`, results in `results`.
        let bench = |r: &Runner, pes: &str, results: &str, cap: u64| {
            let mut c = r.bench(ptx, &work.join(results));
            c.args(["--pes", pes, "--no-lto", "--no-plots", "--timeout"])
                .arg((cap - 20).to_string())
                .arg("--candidates")
                .arg(r.pack.join("candidates"))
                .args(["--", "--no-nccl"]);
            c
        };
        let mut steps: Vec<(&str, u64, Command, [&str; 2])> = Vec::new();
        // Caps of the benchmark at 1 and 2 PEs (seconds, nvcc of the C++ twins in the first).
        const P1: u64 = 200;
        const P2: u64 = 180;
        let with_bench = matches!(parts, Perf::All | Perf::Bench);
        let with_rest = matches!(parts, Perf::All | Perf::Rest);
        if with_bench {
            // (a) Rust against C++, every candidate: 1 PE then 2 PEs.
            steps.push((
                "perf-bench-1a",
                P1,
                bench(self, "1", "a", P1),
                ["a/pe1.csv", "perf-pe1a.csv"],
            ));
            steps.push((
                "perf-bench-2a",
                P2,
                bench(self, "2", "a", P2),
                ["a/pe2.csv", "perf-pe2a.csv"],
            ));
        }
        if with_rest {
            // (b) The mma.sync candidates, the current mma.sync and wgmma against cuBLAS.
            let mut c = self.command(&self.bin("nvshmem-bench"), ptx);
            c.env("LD_LIBRARY_PATH", with_cublas())
                .args([
                    "gemm",
                    "--sizes",
                    "1024,2048,4096,8192",
                    "--no-fused",
                    "--candidates",
                ])
                .arg("--csv")
                .arg(work.join("gemm.csv"));
            steps.push(("perf-gemm", 150, c, ["gemm.csv", "perf-gemm.csv"]));
            // (c) Launch and module costs, with the raw driver rows.
            let mut c = self.command(&self.bin("runtime_costs"), ptx);
            c.env("CUDA_CACHE_DISABLE", "1");
            steps.push(("perf-costs", 60, c, ["", ""]));
            // (d) Init against C++ (default heap and 256 MiB); its CSV in the archive.
            let mut c = self.xtask("init-cost");
            c.envs(BASE_ENV.iter().copied())
                .arg("--rust")
                .arg(self.bin("runtime_costs"))
                .arg("--csv")
                .arg(work.join("init.csv"));
            steps.push(("perf-init", 120, c, ["", ""]));
        }
        if with_bench {
            // (a) again, for the spread.
            steps.push((
                "perf-bench-1b",
                P1,
                bench(self, "1", "b", P1),
                ["b/pe1.csv", "perf-pe1b.csv"],
            ));
            steps.push((
                "perf-bench-2b",
                P2,
                bench(self, "2", "b", P2),
                ["b/pe2.csv", "perf-pe2b.csv"],
            ));
        }
        // NVSHMEM_RS_PERF_BUDGET: another budget (seconds), to try the logic.
        let budget = std::env::var("NVSHMEM_RS_PERF_BUDGET")
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(PERF_BUDGET);
        for (name, cap, c, [from, to]) in steps {
            let left = budget.saturating_sub(t0.elapsed().as_secs());
            // A step with less than half its cap left would only be cut short.
            if left < cap / 2 {
                self.skip(name, &format!("time budget: {left} s left of {budget} s"));
                continue;
            }
            self.record(name, crate::timed(c, cap.min(left)));
            if !from.is_empty() {
                keep(from, to);
            }
        }
        // The summary: candidates per family over the runs, the GEMM lines,
        // the launch and init comparisons.
        let mut summary = format!("# issue 24 run ({parts:?}, {} s)\n", t0.elapsed().as_secs());
        let csvs: Vec<PathBuf> = ["a/pe1.csv", "b/pe1.csv", "a/pe2.csv", "b/pe2.csv"]
            .iter()
            .map(|f| work.join(f))
            .filter(|p| p.is_file())
            .collect();
        if !csvs.is_empty() {
            summary += "\n## Rust/C++ time per family, every candidate\n\n";
            if let Ok(o) = Command::new(self.bin("nvshmem-bench"))
                .arg("compare")
                .args(&csvs)
                .output()
            {
                summary += &String::from_utf8_lossy(&o.stdout);
            }
        }
        let lines = |log: &str, keep: &dyn Fn(&str) -> bool| -> String {
            std::fs::read_to_string(work.join(log))
                .unwrap_or_default()
                .lines()
                .filter(|l| keep(l))
                .map(|l| format!("    {l}\n"))
                .collect()
        };
        if with_rest {
            summary +=
                "\n## GEMM, bf16, % of cuBLAS and of the mma.sync peak (registers in the log)\n\n";
            summary += &lines("perf-gemm.log", &|l| {
                l.contains("cuBLAS") || l.contains("registers") || l.contains("chains per warp")
            });
            summary += "\n## Launch: this crate against the raw driver calls\n\n";
            summary += &lines("perf-costs.log", &|l| {
                l.contains("launch") || l.contains("init")
            });
            summary += "\n## Init at 1 PE, Rust against C++ (medians)\n\n";
            summary += &lines("perf-init.log", &|l| {
                l.starts_with('|') || l.starts_with("PASS")
            });
        }
        let _ = std::fs::write(out.join("perf-summary.md"), &summary);
        // Everything else (logs, tables, SASS, init.csv) as one file.
        let tar = Command::new("timeout")
            .args(["60", "tar", "-cJf"])
            .arg(out.join(format!(
                "perf-logs-{}.tar.xz",
                format!("{parts:?}").to_lowercase()
            )))
            .arg("-C")
            .arg(&work)
            .arg(".")
            .status();
        if !tar.is_ok_and(|s| s.success()) {
            println!("warning: could not archive {}", work.display());
        }
        println!("\n{summary}");
        self.out = out;
        Ok(())
    }

    /// `xtask bench` on the pack's programs and kernels, results in `results`.
    fn bench(&self, ptx: &Path, results: &Path) -> Command {
        let mut c = self.xtask("bench");
        c.arg("--ptx-dir")
            .arg(ptx)
            .arg("--bench-ptx-dir")
            .arg(self.ptx("ptx-bench", "3.4.5"))
            .arg("--bench")
            .arg(self.bin("nvshmem-bench"))
            .arg("--launcher")
            .arg(self.bin("nvshmem-run"))
            .arg("--results")
            .arg(results);
        c
    }

    /// The pack's NVSHMEM (`nvshmem/`), its host library unpacked (the pack
    /// carries it xz-compressed).
    fn unpack_host(&self) -> Result<PathBuf, String> {
        let nv = self.pack.join("nvshmem");
        let host = nv.join("lib/libnvshmem_host.so.3");
        if !host.exists() && host.with_extension("3.xz").exists() {
            crate::check(
                Command::new("xz")
                    .args(["-dk"])
                    .arg(host.with_extension("3.xz")),
            )?;
        }
        Ok(nv)
    }

    /// The torch pack's runs: the wheel unpacked into `$OUT/pylib` beside
    /// the pack's pytest, then pytest in one process, the launch benchmark,
    /// memcheck of that pytest, and under MPS pytest and the example with 2
    /// torchrun ranks.
    fn torch(&mut self) -> Result<(), String> {
        let has_torch = Command::new("python3")
            .args(["-c", "import torch"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !has_torch {
            self.skip("torch", "python3 cannot import torch here");
            return Ok(());
        }
        let pylib = self.out.join("pylib");
        let _ = std::fs::remove_dir_all(&pylib);
        let wheel = std::fs::read_dir(self.pack.join("wheel"))
            .map_err(|e| format!("the pack's wheel/: {e}"))?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .ok_or("the pack has no wheel")?;
        crate::check(
            Command::new("python3")
                .args(["-m", "zipfile", "-e"])
                .arg(&wheel)
                .arg(&pylib),
        )?;
        let path = crate::python::python_path(&[pylib, self.pack.join("pylib")]);
        let tests = self.pack.join("python-tests");
        let examples = self.pack.join("examples-torch");
        // python3, or a program that runs it (compute-sanitizer), with the
        // package, the pytest and the kernels of the pack.
        let with = |r: &Self, program: &str| {
            let mut c = r.command(Path::new(program), &r.pack.join("ptx"));
            c.env("PYTHONPATH", &path)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .env("NVSHMEM_RS_TEST_KERNELS", r.pack.join("ptx-pytest"))
                .env("NVSHMEM_RS_EXAMPLE_KERNELS", r.pack.join("ptx"))
                .current_dir(&r.out);
            c
        };
        let python = |r: &Self| with(r, "python3");
        let pytest = ["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"];
        let mut c = python(self);
        c.args(pytest).arg(&tests);
        self.record("torch-pytest-1", c);
        let mut c = python(self);
        c.arg(examples.join("launch_overhead.py"));
        self.record("torch-launch-overhead-1", c);
        // memcheck of the package's pytest in one process (our kernels on
        // torch's tensors, graph capture): not of the example, which needs 2
        // ranks (torch's symmetric memory refuses one), and 2 ranks on one
        // GPU need MPS, whose clients the sanitizer does not follow.
        if crate::nvcc::on_path("compute-sanitizer").is_some() {
            let mut c = with(self, "compute-sanitizer");
            c.args(["--tool", "memcheck", "--error-exitcode", "1"])
                .args(["--report-api-errors", "no", "--target-processes", "all"])
                .arg("python3")
                .args(pytest)
                .arg(&tests);
            self.record("torch-pytest-memcheck-1", c);
        } else {
            self.skip("torch-pytest-memcheck-1", NO_SANITIZER);
        }
        let _mps = self.mps();
        let torchrun = ["-m", "torch.distributed.run", "--nproc-per-node", "2"];
        let mut c = python(self);
        c.args(torchrun)
            .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
            .arg(tests.join("test_gpu.py"));
        self.record("torch-pytest-2-mps", c);
        let mut c = python(self);
        c.args(torchrun).arg(examples.join("torch_example.py"));
        self.record("torch-example-2-mps", c);
        Ok(())
    }

    /// This pack's `xtask TASK`, run in the pack's `src/`, which holds the
    /// CUDA C++ sources it builds ([`CUDA_SOURCES`](crate::pack::CUDA_SOURCES)).
    fn xtask(&self, task: &str) -> Command {
        let mut c = Command::new(self.bin("xtask"));
        c.arg(task).current_dir(self.pack.join("src"));
        c
    }

    /// Whether `--only` lets step `name` run; the steps it does not are
    /// remembered for the summary.
    fn selected(&mut self, name: &str) -> bool {
        if self
            .only
            .as_ref()
            .is_some_and(|only| !name.contains(only.as_str()))
        {
            self.not_selected.push(name.to_string());
            return false;
        }
        true
    }

    /// Records step `name` as SKIPPED, saying why (unless `--only` leaves it out).
    fn skip(&mut self, name: &str, why: &str) {
        if self.selected(name) {
            println!("=== {name}\n    SKIPPED: {why}");
            self.table
                .push((name.to_string(), format!("SKIPPED ({why})")));
        }
    }

    /// Runs `c`, logs to `$OUT/<name>.log`, and records PASS, FAIL or SKIPPED.
    fn record(&mut self, name: &str, mut c: Command) {
        if !self.selected(name) {
            return;
        }
        if let Err(e) = self.mps.start_if_wanted(self.gpu) {
            println!("=== {name}\n    FAIL (CUDA MPS: {e})");
            self.table
                .push((name.to_string(), format!("FAIL (CUDA MPS: {e})")));
            return;
        }
        println!("=== {name}: {:?}", c.get_program());
        let log = self.out.join(format!("{name}.log"));
        let t0 = Instant::now();
        let verdict = match std::fs::File::create(&log).and_then(|f| {
            let f2 = f.try_clone()?;
            c.stdout(f).stderr(f2).status()
        }) {
            Err(e) => format!("FAIL (cannot start: {e})"),
            Ok(status) => {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let secs = t0.elapsed().as_secs();
                verdict(status.success(), &text, secs)
            }
        };
        println!("    {verdict}");
        // Ranks killed mid-kernel can leave the MPS server unable to serve
        // the next program (its init then fails with a launch error): a
        // failure under MPS gets a fresh server.
        if verdict.starts_with("FAIL") && self.mps.daemon.borrow().is_some() {
            Mps::restart();
        }
        self.table.push((name.to_string(), verdict));
    }

    /// `mpirun -n <n> <program> <args>` from the pack's Open MPI, as root if
    /// need be, forwarding the settings every rank needs.
    fn mpirun(&self, n: &str, program: &Path, args: &[&str], ptx: &Path) -> Command {
        let ompi = self.pack.join("openmpi");
        let mut c = self.command(&ompi.join("bin/mpirun"), ptx);
        c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("LD_LIBRARY_PATH", prepend(&ompi.join("lib")))
            .args(["--oversubscribe", "-n", n]);
        // Every variable set for mpirun reaches the ranks (`-x NAME`).
        let names: Vec<String> = c
            .get_envs()
            .filter(|(k, v)| v.is_some() && !k.to_string_lossy().starts_with("OMPI_"))
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for name in names {
            c.args(["-x", &name]);
        }
        c.arg(program).args(args);
        c
    }

    /// CUDA MPS for the life of the guard (several PEs per GPU need it), when a GPU is here.
    fn mps(&self) -> MpsScope {
        // Without a GPU there is no daemon, and no variables of one.
        self.mps.wanted.set(self.gpu);
        MpsScope(self.mps.clone())
    }
}

/// Seconds one [`Mode::Perf`] run may take: a device call allows 600, and
/// one `gpu-run` call should end within 8.5 minutes with unpacking and `Info`.
const PERF_BUDGET: u64 = 470;

/// Which steps [`Runner::perf`] runs.
#[derive(Clone, Copy, Debug)]
enum Perf {
    All,
    Bench,
    Rest,
}

/// Whether `nvidia-smi -L` lists a GPU.
pub(crate) fn gpu_present() -> bool {
    Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// Why a sanitizer step cannot run.
const NO_SANITIZER: &str = "compute-sanitizer is not on PATH (the GPU machine's CUDA has it)";

/// The MoE layer example: only the moe pack has it (`sanitizer` there).
const MOE_EXAMPLE: &[(&str, &[&str])] = &[("moe_layer", &[])];

/// The examples every `Examples` run starts: (binary, arguments).
const EXAMPLES: &[(&str, &[&str])] = &[
    ("ring", &[]),
    ("allreduce", &["--quick"]),
    ("ag_gemm", &["--dtype", "f32"]),
];

/// The smaller problem an example gets under racecheck, which checks every
/// shared-memory access: AG+GEMM at its default 2048³ ran past 300 s there.
fn racecheck_size(example: &str) -> &'static [&'static str] {
    match example {
        "ag_gemm" => &[
            "--m-per-pe",
            "256",
            "--k",
            "256",
            "--n",
            "256",
            "--samples",
            "64",
        ],
        _ => &[],
    }
}

/// Why UCX with P2P off cannot run here, if it cannot: its AMOs go through
/// NVSHMEM's proxy, which needs the GPU's memory mapped for the CPU, through
/// GDRCopy (`/dev/gdrdrv`) or, in NVSHMEM 3.8, CUDA's DMA-BUF mmap (driver
/// R610 or later).
fn no_gpu_cpu_mapping() -> Option<String> {
    if Path::new("/dev/gdrdrv").exists() {
        return None;
    }
    let driver = Command::new("nvidia-smi")
        .args(["--query-gpu=driver_version", "--format=csv,noheader"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let major: u32 = driver
        .split('.')
        .next()
        .and_then(|m| m.trim().parse().ok())
        .unwrap_or(0);
    (major < 610).then(|| {
        format!(
            "UCX with P2P off needs GPU memory mapped for the CPU (NVSHMEM's proxy does the AMOs): \
             GDRCopy (no /dev/gdrdrv here) or driver R610+ for NVSHMEM 3.8's DMA-BUF mapping \
             (driver {driver} here)"
        )
    })
}

/// The verdict of a run from its exit status and output, never hiding a skip:
/// - `FAIL` when it exited with an error;
/// - `PASS` when something passed (a `PASS` marker, or the harness's
///   `N passed` with N > 0) and nothing was skipped;
/// - `PASS (N skipped: reason)` when something passed and N lines say
///   `SKIPPED` (or `no GPU:`);
/// - `SKIPPED (N: reason)` when nothing passed and something skipped;
/// - `UNCHECKED` when it exited 0 with neither marker (a measurement that
///   checks nothing): not a pass.
fn verdict(success: bool, text: &str, secs: u64) -> String {
    let skips: Vec<&str> = text.lines().filter_map(skip_reason).collect();
    let passed = text.lines().any(|l| {
        l.contains("PASS")
            || l.split(" passed").next().is_some_and(|head| {
                l.contains(" passed")
                    && head
                        .rsplit(' ')
                        .next()
                        .and_then(|n| n.trim().parse::<u32>().ok())
                        .is_some_and(|n| n > 0)
            })
    });
    let why = || {
        let first = skips.first().copied().unwrap_or_default();
        let first: String = first.chars().take(160).collect();
        let others = skips.iter().filter(|s| **s != skips[0]).count();
        match others {
            0 => first,
            k => format!("{first}; and {k} other(s), see the log"),
        }
    };
    match (success, passed, skips.len()) {
        (false, _, _) => format!("FAIL ({secs} s)"),
        (true, true, 0) => format!("PASS ({secs} s)"),
        (true, true, n) => format!("PASS ({n} skipped: {}) ({secs} s)", why()),
        (true, false, 0) => {
            format!("UNCHECKED ({secs} s; exit 0, but it printed no PASS and no SKIPPED)")
        }
        (true, false, n) => format!("SKIPPED ({n}: {}) ({secs} s)", why()),
    }
}

/// Why a line says something was skipped, if it does (`SKIPPED: why`,
/// `SKIPPED why`, `no GPU: why`).
fn skip_reason(line: &str) -> Option<&str> {
    if let Some(i) = line.find("SKIPPED") {
        let rest = line[i + "SKIPPED".len()..].trim_start_matches([':', ' ']);
        return Some(if rest.is_empty() {
            "no reason given"
        } else {
            rest
        });
    }
    line.find("no GPU:").map(|i| &line[i..])
}

/// `LD_LIBRARY_PATH` with the folder of `libcublas.so.13` (which cudarc opens
/// by name) from a Python environment's `nvidia-cublas` (PyTorch's).
fn with_cublas() -> std::ffi::OsString {
    let found = nvshmem_builder::install::python_site_packages()
        .into_iter()
        .flat_map(|site| [site.join("nvidia/cu13/lib"), site.join("nvidia/cublas/lib")])
        .find(|d| d.join("libcublas.so.13").is_file());
    match found {
        Some(dir) => prepend(&dir),
        None => std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default(),
    }
}

/// `dir` before the current `LD_LIBRARY_PATH`.
fn prepend(dir: &Path) -> std::ffi::OsString {
    let mut v = dir.as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        v.push(":");
        v.push(old);
    }
    v
}

/// [`Runner`]'s CUDA MPS: whether the current steps want it, and the daemon
/// once one of them has run.
#[derive(Default)]
struct MpsState {
    wanted: Cell<bool>,
    daemon: RefCell<Option<Mps>>,
}

impl MpsState {
    /// Starts the daemon for a step about to run, if its scope wants one and
    /// none runs yet (never without a GPU).
    fn start_if_wanted(&self, gpu: bool) -> Result<(), String> {
        if gpu && self.wanted.get() && self.daemon.borrow().is_none() {
            *self.daemon.borrow_mut() = Some(Mps::start()?);
        }
        Ok(())
    }
}

/// The steps run while this lives get CUDA MPS ([`Runner::mps`]); the
/// daemon, if one of them started it, stops when it is dropped.
struct MpsScope(Rc<MpsState>);

impl Drop for MpsScope {
    fn drop(&mut self) {
        self.0.wanted.set(false);
        self.0.daemon.borrow_mut().take();
    }
}

/// A running MPS control daemon; stopped on drop when this run started it.
pub(crate) struct Mps {
    started: bool,
}

impl Mps {
    /// The variables of the daemon's clients (and of the daemon).
    pub(crate) fn env() -> [(&'static str, PathBuf); 3] {
        let tmp = std::env::temp_dir();
        [
            ("CUDA_MPS_PIPE_DIRECTORY", tmp.join("nvshmem-rs-mps")),
            ("CUDA_MPS_LOG_DIRECTORY", tmp.join("nvshmem-rs-mps-log")),
            (
                "NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                "1".into(),
            ),
        ]
    }

    pub(crate) fn start() -> Result<Mps, String> {
        for (_, dir) in &Self::env()[..2] {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        // A daemon already on this pipe (another run's, or one a killed run
        // left) serves this run too, and is left running: a second `-d`
        // would fail ("already running").
        let started = !Self::running();
        if started {
            crate::check(
                Command::new("nvidia-cuda-mps-control")
                    .arg("-d")
                    .envs(Self::env()),
            )?;
        }
        Ok(Mps { started })
    }

    /// Whether a daemon answers on this pipe (quietly: none is no error).
    fn running() -> bool {
        Self::env()[0].1.join("control").exists()
            && Command::new("sh")
                .args(["-c", "echo get_server_list | nvidia-cuda-mps-control"])
                .envs(Self::env())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    }

    /// Quits the daemon and starts a new one on the same pipe, whose clients
    /// get a new server.
    fn restart() {
        Self::stop();
        let start = Command::new("nvidia-cuda-mps-control")
            .arg("-d")
            .envs(Self::env())
            .status();
        if !start.is_ok_and(|s| s.success()) {
            eprintln!("warning: restarting CUDA MPS failed");
        }
    }

    /// Asks the daemon on this pipe to quit, and gives it a second.
    fn stop() {
        let stop = Command::new("sh")
            .args(["-c", "echo quit | nvidia-cuda-mps-control"])
            .envs(Self::env())
            .status();
        if !stop.is_ok_and(|s| s.success()) {
            eprintln!("warning: stopping CUDA MPS failed");
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

impl Drop for Mps {
    fn drop(&mut self) {
        if self.started {
            Self::stop();
        }
    }
}

/// Unpacks the `*.cubin.xz` under `dir` (a `nvshmem` pack's), once.
fn unpack_cubins(dir: &Path) -> Result<(), String> {
    for e in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let p = e.path();
        if p.is_dir() {
            unpack_cubins(&p)?;
        } else if p.to_string_lossy().ends_with(".cubin.xz") && !p.with_extension("").exists() {
            crate::check(Command::new("xz").arg("-dk").arg(&p))?;
        }
    }
    Ok(())
}

/// `nvidia-smi` sampling the GPU every 100 ms into a CSV while a step runs.
struct ClockSampler {
    child: Option<std::process::Child>,
    samples: PathBuf,
}

/// What [`ClockSampler`] asks `nvidia-smi` for, in this order.
const CLOCK_QUERY: &str =
    "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active";

impl ClockSampler {
    /// Starts sampling into `samples`; a machine without `nvidia-smi` gets
    /// a sampler whose summary says so.
    fn start(samples: &Path) -> Self {
        let child = std::fs::File::create(samples).ok().and_then(|f| {
            Command::new("nvidia-smi")
                .arg(format!("--query-gpu={CLOCK_QUERY}"))
                .args(["--format=csv,noheader,nounits", "-lms", "100"])
                .stdout(f)
                .stderr(std::process::Stdio::null())
                .spawn()
                .ok()
        });
        Self {
            child,
            samples: samples.to_path_buf(),
        }
    }

    /// Stops sampling; the table's verdict for the samples.
    fn stop(mut self) -> String {
        if !self.end() {
            return "SKIPPED (nvidia-smi could not start)".into();
        }
        let text = std::fs::read_to_string(&self.samples).unwrap_or_default();
        clock_summary(&text)
    }

    /// Ends `nvidia-smi` if it runs; whether it had started.
    fn end(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return false;
        };
        let _ = child.kill();
        let _ = child.wait();
        true
    }
}

impl Drop for ClockSampler {
    fn drop(&mut self) {
        self.end();
    }
}

/// Median and extremes of [`ClockSampler`]'s CSV lines (timestamp, SM MHz,
/// W, °C, event-reason mask), and every event-reason mask seen.
fn clock_summary(text: &str) -> String {
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>())
        .filter(|f| f.len() == 5 && f[1].parse::<f64>().is_ok())
        .collect();
    if rows.is_empty() {
        return "SKIPPED (no samples: nvidia-smi gave none this driver reads)".into();
    }
    let column = |k: usize| -> Vec<f64> {
        let mut v: Vec<f64> = rows.iter().filter_map(|r| r[k].parse().ok()).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (sm, power, temp) = (column(1), column(2), column(3));
    let median = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    let last = |v: &[f64]| v.last().copied().unwrap_or(f64::NAN);
    let mut reasons: Vec<&str> = rows.iter().map(|r| r[4]).collect();
    reasons.sort_unstable();
    reasons.dedup();
    format!(
        "{} samples: SM clock median {:.0} MHz (min {:.0}, max {:.0}), power median {:.0} W (max {:.0}), \
         temperature max {:.0} C, clock-event reasons {}",
        rows.len(),
        median(&sm),
        sm.first().copied().unwrap_or(f64::NAN),
        last(&sm),
        median(&power),
        last(&power),
        last(&temp),
        reasons.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::{Mps, Runner, clock_summary, verdict};
    use std::process::Command;

    /// A step `--only` leaves out starts no MPS daemon, even on a GPU
    /// machine; the steps of an MPS scope, and only they, get its variables.
    #[test]
    fn mps_starts_only_for_a_selected_step() {
        let mut r = Runner {
            pack: "/nonexistent".into(),
            out: std::env::temp_dir(),
            gpu: true,
            mps: Default::default(),
            table: Vec::new(),
            release: None,
            only: Some("no-such-step".into()),
            not_selected: Vec::new(),
        };
        let pipe = Mps::env()[0].0;
        let has_pipe = |c: &Command| c.get_envs().any(|(k, _)| k == pipe);
        assert!(!has_pipe(&r.command("true".as_ref(), "ptx".as_ref())));
        {
            let _mps = r.mps();
            let c = r.command("true".as_ref(), "ptx".as_ref());
            assert!(has_pipe(&c));
            r.record("gpu-mps", c);
            assert!(r.mps.daemon.borrow().is_none());
        }
        assert!(!r.mps.wanted.get());
        assert!(!has_pipe(&r.command("true".as_ref(), "ptx".as_ref())));
        assert_eq!(r.not_selected, ["gpu-mps"]);
        assert!(r.table.is_empty());
    }

    #[test]
    fn clock_summaries() {
        let text = "2026/12/06 18:00:00.100, 1980, 400.5, 50, 0x0000000000000000\n\
                    2026/12/06 18:00:00.200, 1755, 690.1, 61, 0x0000000000000004\n\
                    2026/12/06 18:00:00.300, 1830, 650.0, 58, 0x0000000000000004\n";
        assert_eq!(
            clock_summary(text),
            "3 samples: SM clock median 1830 MHz (min 1755, max 1980), power median 650 W \
             (max 690), temperature max 61 C, clock-event reasons 0x0000000000000000 \
             0x0000000000000004"
        );
        assert!(
            clock_summary("Field \"clocks_event_reasons\" is not a valid field\n")
                .starts_with("SKIPPED (no samples")
        );
    }

    #[test]
    fn verdicts() {
        let v = verdict(
            true,
            "test x [1 PE] ... SKIPPED: no GPU\ntest y [1 PE] ... SKIPPED: no GPU\n0 passed, 0 failed, 2 skipped",
            1,
        );
        assert_eq!(v, "SKIPPED (2: no GPU) (1 s)");
        assert!(verdict(true, "3 passed, 0 failed, 0 skipped", 1).starts_with("PASS (1 s)"));
        assert!(verdict(true, "ring: ... PASS; 0.9 us per hop", 1).starts_with("PASS"));
        assert!(verdict(false, "SKIPPED", 1).starts_with("FAIL"));
        assert!(verdict(true, "ring: no GPU: no CUDA driver", 1).starts_with("SKIPPED"));
    }

    #[test]
    fn skips_beside_passes_are_shown() {
        let text = "test a [2 PE] ... ok (0.1 s)\n\
                    test a [4 PE] ... SKIPPED: 4 PEs on 1 GPU(s) need CUDA MPS\n\
                    test b [4 PE] ... SKIPPED: 4 PEs on 1 GPU(s) need CUDA MPS\n\
                    1 passed, 0 failed, 2 skipped";
        assert_eq!(
            verdict(true, text, 3),
            "PASS (2 skipped: 4 PEs on 1 GPU(s) need CUDA MPS) (3 s)"
        );
        let text = "test g [1 PE] ... ok (1.0 s), part(s) SKIPPED: wgmma: not sm_90a\n\
                    1 passed (1 with parts skipped), 0 failed, 0 skipped";
        assert_eq!(
            verdict(true, text, 1),
            "PASS (1 skipped: wgmma: not sm_90a) (1 s)"
        );
        // mpirun: every rank's own summary.
        let text = "[rank 0] test a [2 PE] ... ok (0.1 s)\n\
                    [rank 0] test b [2 PE] ... SKIPPED: runs on [1] PEs, not on this job's 2\n\
                    [rank 0] 1 passed, 0 failed, 1 skipped";
        assert!(verdict(true, text, 1).starts_with("PASS (1 skipped: runs on [1] PEs"));
    }

    #[test]
    fn no_marker_is_not_a_pass() {
        let v = verdict(
            true,
            "PE 0/1: init 600.0 ms\nPE 0/1: plain launch: 3.2 us",
            2,
        );
        assert!(v.starts_with("UNCHECKED"), "{v}");
        assert!(verdict(true, "0 passed, 0 failed, 0 skipped", 2).starts_with("UNCHECKED"));
    }
}
