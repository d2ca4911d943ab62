//! The key/value cache of a batch of sequences, preallocated and filled in place.
//!
//! All rows share one length (shorter rows are left-padded); `mask` records which slots
//! hold real tokens, which is also what ALiBi positions are computed from. Rows can be
//! dropped (finished sequences), reordered or repeated (beam search) and appended
//! (continuous batching) without recomputing anything.
//!
//! A cache can also hold a *shared prefix*: one prompt's keys and values, stored once and
//! attended to by every row (beam search: the beams share the prompt, and reordering beams
//! only moves the few positions they generated).

use candle_core::{DType, Device, Result, Tensor};

/// Keys and values of a prompt that every row of the batch continues.
struct SharedPrefix {
    /// Per layer: `[1, heads, len, head_dim]`, contiguous.
    layers: Vec<(Tensor, Tensor)>,
    mask: Vec<u8>,
}

pub struct KvCache {
    shared: Option<SharedPrefix>,
    /// Per layer: keys and values, `[batch, heads, capacity, head_dim]`.
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
    capacity: usize,
    /// Per row: 1 for a real token, 0 for padding; `len` entries each.
    mask: Vec<Vec<u8>>,
    n_head: usize,
    head_dim: usize,
    device: Device,
    dtype: DType,
}

impl KvCache {
    pub fn new(
        n_layer: usize,
        n_head: usize,
        head_dim: usize,
        batch: usize,
        capacity: usize,
        device: &Device,
        dtype: DType,
    ) -> Result<Self> {
        let capacity = capacity.max(1);
        let layers = (0..n_layer)
            .map(|_| {
                let k = Tensor::zeros((batch, n_head, capacity, head_dim), dtype, device)?;
                let v = Tensor::zeros((batch, n_head, capacity, head_dim), dtype, device)?;
                Ok((k, v))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            shared: None,
            layers,
            len: 0,
            capacity,
            mask: vec![Vec::new(); batch],
            n_head,
            head_dim,
            device: device.clone(),
            dtype,
        })
    }

    pub fn batch(&self) -> usize {
        self.mask.len()
    }

    /// Positions each row attends to: the shared prefix plus the row's own.
    pub fn len(&self) -> usize {
        self.shared_len() + self.len
    }

    /// Positions of the rows' own part (what `capacity` counts).
    pub fn own_len(&self) -> usize {
        self.len
    }

    /// Keys and values of `layer`'s own part, `[batch, heads, capacity, head_dim]`.
    pub fn layer(&self, layer: usize) -> (&Tensor, &Tensor) {
        let (k, v) = &self.layers[layer];
        (k, v)
    }

    /// Positions in the shared prefix (0 without one).
    pub fn shared_len(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.mask.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Per row, the mask of every position it attends to (shared prefix first).
    pub fn key_masks(&self) -> Vec<Vec<u8>> {
        let prefix = self.shared.as_ref().map_or(&[][..], |s| &s.mask[..]);
        self.mask.iter().map(|own| [prefix, own.as_slice()].concat()).collect()
    }

    /// The shared prefix's keys and values for `layer`, if the cache has one.
    pub fn shared_kv(&self, layer: usize) -> Option<(&Tensor, &Tensor)> {
        self.shared.as_ref().map(|s| (&s.layers[layer].0, &s.layers[layer].1))
    }

    /// Turns a one-row cache into a shared prefix continued by `rows` rows, each with room
    /// for `capacity` positions of its own.
    pub fn into_shared(self, rows: usize, capacity: usize) -> Result<KvCache> {
        if self.batch() != 1 || self.shared.is_some() {
            candle_core::bail!("into_shared: needs a one-row cache without a shared prefix");
        }
        let n_layer = self.layers.len();
        let shared = SharedPrefix {
            layers: self
                .layers
                .iter()
                .map(|(k, v)| Ok((k.narrow(2, 0, self.len)?.contiguous()?, v.narrow(2, 0, self.len)?.contiguous()?)))
                .collect::<Result<_>>()?,
            mask: self.mask[0].clone(),
        };
        let mut out = KvCache::new(n_layer, self.n_head, self.head_dim, rows, capacity, &self.device, self.dtype)?;
        out.shared = Some(shared);
        Ok(out)
    }

    /// Bytes held by the cache tensors.
    pub fn bytes(&self) -> usize {
        self.layers.len() * 2 * self.batch() * self.n_head * self.capacity * self.head_dim * self.dtype.size_in_bytes()
    }

    /// Makes room for `extra` more positions, growing (by copying) only when full.
    pub fn reserve(&mut self, extra: usize) -> Result<()> {
        let need = self.len + extra;
        if need <= self.capacity {
            return Ok(());
        }
        self.set_capacity(need.max(self.capacity * 2))
    }

    /// Reallocates the own part to exactly `cap` positions (at least `len`).
    fn set_capacity(&mut self, cap: usize) -> Result<()> {
        let cap = cap.max(self.len).max(1);
        if cap == self.capacity {
            return Ok(());
        }
        let batch = self.batch();
        for (k, v) in self.layers.iter_mut() {
            for t in [k, v] {
                let resized = Tensor::zeros((batch, self.n_head, cap, self.head_dim), self.dtype, &self.device)?;
                if self.len > 0 {
                    resized.slice_set(&t.narrow(2, 0, self.len)?.contiguous()?, 2, 0)?;
                }
                *t = resized;
            }
        }
        self.capacity = cap;
        Ok(())
    }

    /// Records the mask of `t` new positions per row; call once per forward, before `write`.
    pub fn push_mask(&mut self, new_mask: &[Vec<u8>]) -> Result<()> {
        if new_mask.len() != self.batch() {
            candle_core::bail!("mask for {} rows, cache has {}", new_mask.len(), self.batch());
        }
        for (row, add) in self.mask.iter_mut().zip(new_mask) {
            row.extend_from_slice(add);
        }
        Ok(())
    }

    /// Stores `k`, `v` (`[batch, heads, t, head_dim]`) at the row's own positions
    /// `len..len + t` of `layer` and returns views of all own positions so far.
    pub fn write(&mut self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let t = k.dim(2)?;
        let (kc, vc) = &self.layers[layer];
        kc.slice_set(&k.to_dtype(self.dtype)?.contiguous()?, 2, self.len)?;
        vc.slice_set(&v.to_dtype(self.dtype)?.contiguous()?, 2, self.len)?;
        Ok((kc.narrow(2, 0, self.len + t)?, vc.narrow(2, 0, self.len + t)?))
    }

    /// Marks the `t` positions written by the last forward as filled.
    pub fn advance(&mut self, t: usize) {
        self.len += t;
    }

    /// Keeps the rows `rows` (in that order; a row may repeat): finished sequences leave,
    /// beams are reordered.
    pub fn select_rows(&mut self, rows: &[usize]) -> Result<()> {
        if rows.iter().any(|&r| r >= self.batch()) {
            candle_core::bail!("select_rows: row out of range");
        }
        let idx = Tensor::from_vec(rows.iter().map(|&r| r as u32).collect::<Vec<_>>(), rows.len(), &self.device)?;
        for (k, v) in self.layers.iter_mut() {
            *k = k.index_select(&idx, 0)?;
            *v = v.index_select(&idx, 0)?;
        }
        self.mask = rows.iter().map(|&r| self.mask[r].clone()).collect();
        Ok(())
    }

    /// Appends the rows of `other` (another cache of the same model), left-padding whichever
    /// side is shorter so that all rows end at the same position.
    pub fn append_rows(&mut self, mut other: KvCache) -> Result<()> {
        if self.shared.is_some() || other.shared.is_some() {
            candle_core::bail!("append_rows: caches with a shared prefix cannot be merged");
        }
        if self.batch() == 0 {
            *self = other;
            return Ok(());
        }
        if other.len > self.len {
            self.left_pad(other.len - self.len)?;
        } else if self.len > other.len {
            other.left_pad(self.len - other.len)?;
        }
        let cap = self.capacity.max(other.capacity);
        self.set_capacity(cap)?;
        other.set_capacity(cap)?;
        for ((k, v), (ok, ov)) in self.layers.iter_mut().zip(other.layers) {
            *k = Tensor::cat(&[&*k, &ok], 0)?;
            *v = Tensor::cat(&[&*v, &ov], 0)?;
        }
        self.mask.extend(other.mask);
        Ok(())
    }

    /// Shifts every row right by `pad` masked slots.
    fn left_pad(&mut self, pad: usize) -> Result<()> {
        let new_len = self.len + pad;
        let new_cap = self.capacity.max(new_len);
        let batch = self.batch();
        for (k, v) in self.layers.iter_mut() {
            for t in [k, v] {
                let shifted = Tensor::zeros((batch, self.n_head, new_cap, self.head_dim), self.dtype, &self.device)?;
                if self.len > 0 {
                    shifted.slice_set(&t.narrow(2, 0, self.len)?.contiguous()?, 2, pad)?;
                }
                *t = shifted;
            }
        }
        for row in self.mask.iter_mut() {
            let mut m = vec![0u8; pad];
            m.extend_from_slice(row);
            *row = m;
        }
        self.len = new_len;
        self.capacity = new_cap;
        Ok(())
    }
}
