//! Agreeing on small facts with every PE from the host: a few words per PE,
//! gathered with puts and host barriers. These work in every configuration,
//! including limited MPG (several PEs on one GPU without MPS), where NVSHMEM's
//! own collectives would end the process.
//!
//! The main use is sizing a collective launch when several PEs share a GPU:
//! every PE's blocks must be co-resident, so each PE may only use its share
//! of the GPU ([`Nvshmem::agree_on_grid`]).

use crate::{Nvshmem, Pe, Result, SymBuffer};
use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUdevice_attribute;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Symmetric room for `width` words from every PE, reused by each
/// [`all_gather`](Self::all_gather).
pub struct WordExchange {
    slots: SymBuffer<u64>,
    mine: SymBuffer<u64>,
    width: usize,
}

impl WordExchange {
    /// Allocates `width` words per PE. **Collective.**
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// let ex = nvshmem_host::exchange::WordExchange::new(&nv, 2)?;
    /// let all = ex.all_gather(&nv, &[nv.my_pe().index() as u64, 7])?;
    /// assert_eq!(all.len(), nv.n_pes() as usize);
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn new(nv: &Nvshmem, width: usize) -> Result<WordExchange> {
        Ok(WordExchange {
            slots: nv.alloc_zeroed(width * nv.n_pes() as usize)?,
            mine: nv.alloc_zeroed(width)?,
            width,
        })
    }

    /// [`WordExchange::new`] with allocations that every PE is not asked to
    /// agree on: the exchange that `Nvshmem::alloc` checks them with.
    pub(crate) fn new_unchecked(
        nv: &Nvshmem,
        stream: &CudaStream,
        width: usize,
    ) -> Result<WordExchange> {
        let ex = WordExchange {
            slots: nv.alloc_unchecked(width * nv.n_pes() as usize)?,
            mine: nv.alloc_unchecked(width)?,
            width,
        };
        // Zeroed everywhere before any PE puts into a peer's slots.
        ex.slots.fill(stream, 0)?;
        ex.mine.fill(stream, 0)?;
        nv.barrier_all_on_stream(stream)?;
        nv.synchronize(stream)?;
        Ok(ex)
    }

    /// Every PE's `values`, by PE, each padded with zeros to `width` words.
    /// **Collective.** More than `width` values is an [`Error::BadSize`](crate::Error::BadSize).
    pub fn all_gather(&self, nv: &Nvshmem, values: &[u64]) -> Result<Vec<Vec<u64>>> {
        self.all_gather_on(nv, nv.stream(), values)
    }

    /// [`all_gather`](Self::all_gather) ordered on `stream`.
    pub(crate) fn all_gather_on(
        &self,
        nv: &Nvshmem,
        stream: &CudaStream,
        values: &[u64],
    ) -> Result<Vec<Vec<u64>>> {
        let w = self.width;
        if values.len() > w {
            return Err(crate::Error::BadSize {
                reason: format!(
                    "WordExchange::all_gather of {} words: it was made for {w}",
                    values.len()
                ),
            });
        }
        let mut v = values.to_vec();
        v.resize(w, 0);
        // Every PE has read the previous round before anyone overwrites it.
        nv.barrier_all_on_stream(stream)?;
        self.mine.copy_from_host(stream, &v)?;
        let me = nv.my_pe().index() as usize;
        let dst = self.slots.view(me * w..(me + 1) * w)?;
        for pe in 0..nv.n_pes() {
            nv.put_on_stream(stream, &dst, &self.mine, Pe::new(pe))?;
        }
        nv.barrier_all_on_stream(stream)?;
        let all = self.slots.to_vec(stream)?;
        Ok(all.chunks(w).map(<[u64]>::to_vec).collect())
    }

    /// Whether this PE reaches every PE's memory directly (`nvshmem_ptr`):
    /// NVLink or the same GPU, no remote transport.
    pub fn reaches_every_pe(&self, nv: &Nvshmem) -> Result<bool> {
        for pe in 0..nv.n_pes() {
            if self.slots.peer_ptr(Pe::new(pe))?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// What the PEs agreed on for a collective launch ([`Nvshmem::agree_on_grid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GridAgreement {
    /// The largest grid every PE can launch with every PE's blocks co-resident:
    /// the smallest over PEs of their cap divided by the PEs on their GPU (at least 1).
    pub max_grid: u32,
    /// Every PE reaches every other's memory directly.
    pub all_direct: bool,
    /// How many PEs share this PE's GPU (itself included).
    pub pes_per_gpu: u32,
    /// Every PE has a GPU of its own.
    pub distinct_gpus: bool,
}

impl Nvshmem {
    /// A number that is the same for PEs on the same GPU and, almost surely,
    /// different otherwise: a hash of the host name and the GPU's PCI address.
    pub fn gpu_key(&self) -> Result<u64> {
        let ctx = self.context();
        let mut h = DefaultHasher::new();
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim()
            .hash(&mut h);
        for a in [
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
        ] {
            ctx.attribute(a)
                .map_err(crate::Error::driver("cuDeviceGetAttribute"))?
                .hash(&mut h);
        }
        Ok(h.finish())
    }

    /// Agrees with every PE on a grid for a collective kernel: `cap` is the
    /// most blocks this PE's kernel can have co-resident on its GPU alone
    /// (say [`Kernel::max_collective_blocks`](crate::Kernel::max_collective_blocks)).
    /// PEs that share a GPU split it. **Collective.**
    ///
    /// ```no_run
    /// # let nv = nvshmem_host::Nvshmem::init()?;
    /// # let kernel: nvshmem_host::Kernel = todo!();
    /// let ex = nvshmem_host::exchange::WordExchange::new(&nv, 3)?;
    /// let grid = nv.agree_on_grid(&ex, kernel.max_collective_blocks(256, 0)?)?;
    /// println!("{} blocks per PE, direct: {}", grid.max_grid, grid.all_direct);
    /// # Ok::<(), nvshmem_host::Error>(())
    /// ```
    pub fn agree_on_grid(&self, ex: &WordExchange, cap: u32) -> Result<GridAgreement> {
        let key = self.gpu_key()?;
        let direct = ex.reaches_every_pe(self)?;
        let records = ex.all_gather(self, &[key, u64::from(cap), u64::from(direct)])?;
        let sharing = |key: u64| records.iter().filter(|r| r[0] == key).count() as u64;
        let max_grid = records
            .iter()
            .map(|r| r[1] / sharing(r[0]))
            .min()
            .unwrap_or(1)
            .max(1);
        Ok(GridAgreement {
            max_grid: max_grid as u32,
            all_direct: records.iter().all(|r| r[2] == 1),
            pes_per_gpu: sharing(key) as u32,
            distinct_gpus: records.iter().all(|r| sharing(r[0]) == 1),
        })
    }
}
