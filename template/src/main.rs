//! The host side: starts N PEs of this program (`my-nvshmem-app --pes N`),
//! each of which initializes NVSHMEM, runs `scale_to_next` and checks what
//! arrived from the previous PE. Without a GPU it says so and exits 0.

use nvshmem_host::launcher::{self, LaunchPlan, Outcome};
use nvshmem_host::{Nvshmem, gpu_count};
use std::process::ExitCode;

// `my_kernels::scale_to_next(..)` and `my_kernels::Kernels`, typed from the
// kernels' signatures by the build (build.rs).
nvshmem_host::include_kernels!(my_kernels);

/// Set in the PEs this program starts.
const PE_MODE: &str = "MY_NVSHMEM_APP_PE";
const N: usize = 1 << 16;
const FACTOR: f32 = 3.0;

fn main() -> ExitCode {
    if std::env::var_os(PE_MODE).is_some() {
        return match run_pe() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let pes = match std::env::args().skip_while(|a| a != "--pes").nth(1) {
        None => 2,
        Some(n) => match n.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("usage: my-nvshmem-app [--pes N]   (N >= 1, default 2)");
                return ExitCode::from(2);
            }
        },
    };
    if let Err(e) = gpu_count() {
        println!("no GPU: {e}");
        println!("(the kernels were built; run this on a machine with an NVIDIA GPU)");
        return ExitCode::SUCCESS;
    }
    let exe = std::env::current_exe().expect("this program's path");
    let plan = LaunchPlan::new(pes, exe).with_env(PE_MODE, "1");
    match launcher::run(&plan) {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(other) => {
            eprintln!("{pes} PEs: {other}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("cannot start {pes} PEs: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One PE: every PE sends its scaled vector to the next and checks the one
/// that came from the previous PE.
fn run_pe() -> Result<(), Box<dyn std::error::Error>> {
    let nv = Nvshmem::init()?;
    let (me, n_pes) = (nv.my_pe(), nv.n_pes());
    let prev = me.ring_prev(n_pes).index();
    let input: Vec<f32> = (0..N).map(|i| (me.index() * 1000) as f32 + i as f32).collect();
    let src = nv.alloc_from(&input)?;
    let dest = nv.alloc_zeroed::<f32>(N)?;
    let staging = nv.alloc_zeroed::<f32>(N)?;
    let signal = nv.alloc_zeroed::<u64>(1)?;
    let kernels = my_kernels::Kernels::load(&nv)?;
    // SAFETY: the buffers have N floats (signal: one u64, zeroed), as the
    // kernel's contract asks; one block on every PE.
    unsafe {
        my_kernels::scale_to_next(
            &kernels,
            nv.stream(),
            1,
            256,
            &dest,
            &staging,
            &src,
            N as u64,
            FACTOR,
            &signal,
        )?
    };
    nv.barrier_all_on_stream(nv.stream())?;
    let got = dest.to_vec(nv.stream())?;
    let wrong = (0..N).find(|&i| got[i] != ((prev * 1000) as f32 + i as f32) * FACTOR);
    match wrong {
        None => {
            println!("PE {}/{n_pes}: {N} floats from PE {prev} arrived scaled: PASS", me.index());
            Ok(())
        }
        Some(i) => Err(format!("PE {}: element {i} is {}, expected {}", me.index(), got[i],
            ((prev * 1000) as f32 + i as f32) * FACTOR).into()),
    }
}
