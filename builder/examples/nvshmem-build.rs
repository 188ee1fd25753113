//! Builds one kernel crate from the command line and prints what came out.
//!
//! `cargo run -p nvshmem-builder --example nvshmem-build -- [--device-link=auto|whole-program|separate] [--target-dir=DIR] <crate dir> [sm_90] [3.4.5] [out dir]`
fn main() {
    let (flags, positional): (Vec<String>, Vec<String>) =
        std::env::args().skip(1).partition(|a| a.starts_with("--"));
    let mut args = positional.into_iter();
    let Some(dir) = args.next() else {
        eprintln!(
            "usage: nvshmem-build [--device-link=auto|whole-program|separate] [--target-dir=DIR] <kernel crate dir> [arch] [nvshmem version] [out dir]"
        );
        std::process::exit(2);
    };
    let mut b = nvshmem_builder::Builder::new(dir);
    for flag in flags {
        if let Some(dir) = flag.strip_prefix("--target-dir=") {
            b = b.target_dir(dir);
            continue;
        }
        match flag.strip_prefix("--device-link=").map(str::parse) {
            Some(Ok(mode)) => b = b.device_link(mode),
            Some(Err(e)) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
            None => {
                eprintln!("error: unknown option `{flag}`");
                std::process::exit(2);
            }
        }
    }
    if let Some(arch) = args.next() {
        b = b.arch(arch);
    }
    if let Some(v) = args.next() {
        match v.parse() {
            Ok(v) => b = b.nvshmem_version(v),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        }
    }
    if let Some(out) = args.next() {
        b = b.out_dir(out);
    }
    match b.build() {
        Ok(out) => {
            for (step, t) in &out.timings {
                println!("{step:>24}: {:>7.2} s", t.as_secs_f64());
            }
            println!(
                "ptx: {}\ncubin: {:?} ({})\nmanifest: {}",
                out.ptx.display(),
                out.cubin,
                out.manifest.device_link.as_deref().unwrap_or("no ptxas"),
                out.manifest_path.display()
            );
            for k in &out.manifest.kernels {
                println!(
                    "  {} collective={} regs={:?} spills={:?} params={:?}",
                    k.name,
                    k.collective,
                    k.registers,
                    k.spill_stores,
                    k.params
                        .iter()
                        .map(|p| format!("{}: {} ({})", p.name, p.rust_type, p.c_type))
                        .collect::<Vec<_>>()
                );
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
