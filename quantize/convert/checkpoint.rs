//! A Hugging Face BLOOM checkpoint directory: config.json, tokenizer.json and the weights
//! (model.safetensors, sharded safetensors, or pytorch_model.bin, sharded or not), read one
//! tensor at a time so conversion stays memory-bounded.

use super::ConvertError;
use candle_core::pickle::PthTensors;
use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The hyper-parameters of a BLOOM config.json (names vary between releases).
#[derive(Debug, Clone)]
pub struct HfBloomConfig {
    pub vocab_size: usize,
    pub hidden: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub layer_norm_eps: f64,
    pub context_length: usize,
    pub tie_word_embeddings: bool,
    pub bos_token_id: Option<u32>,
    pub eos_token_id: Option<u32>,
    pub pad_token_id: Option<u32>,
    pub name: Option<String>,
}

impl HfBloomConfig {
    pub fn from_json(v: &serde_json::Value) -> Result<Self, ConvertError> {
        let int = |keys: &[&str]| keys.iter().find_map(|k| v.get(*k).and_then(|x| x.as_u64()));
        let need = |keys: &[&str]| {
            int(keys).map(|x| x as usize).ok_or_else(|| ConvertError::Config(format!("config.json lacks {}", keys[0])))
        };
        if let Some(mt) = v.get("model_type").and_then(|m| m.as_str()) {
            if mt != "bloom" {
                return Err(ConvertError::Config(format!("model_type '{mt}' is not bloom")));
            }
        }
        let hidden = need(&["hidden_size", "n_embed"])?;
        Ok(Self {
            vocab_size: need(&["vocab_size"])?,
            hidden,
            n_layer: need(&["n_layer", "num_hidden_layers"])?,
            n_head: need(&["n_head", "num_attention_heads"])?,
            layer_norm_eps: v.get("layer_norm_epsilon").and_then(|x| x.as_f64()).unwrap_or(1e-5),
            // BLOOM has no learned positions (ALiBi); it was trained on 2048-token sequences.
            context_length: int(&["seq_length", "n_positions", "max_position_embeddings"]).map_or(2048, |x| x as usize),
            tie_word_embeddings: v.get("tie_word_embeddings").and_then(|x| x.as_bool()).unwrap_or(true),
            bos_token_id: int(&["bos_token_id"]).map(|x| x as u32),
            eos_token_id: int(&["eos_token_id"]).map(|x| x as u32),
            pad_token_id: int(&["pad_token_id"]).map(|x| x as u32),
            name: v.get("_name_or_path").and_then(|x| x.as_str()).map(str::to_string),
        })
    }
}

enum Weights {
    Safetensors(MmapedSafetensors),
    Pth(Vec<PthTensors>),
}

/// An opened checkpoint. Tensor names are normalized: the `transformer.` prefix is dropped.
pub struct HfCheckpoint {
    pub dir: PathBuf,
    pub config: HfBloomConfig,
    pub tokenizer_json: String,
    /// tokenizer_config.json and special_tokens_map.json, when present.
    pub tokenizer_config: Option<serde_json::Value>,
    pub special_tokens_map: Option<serde_json::Value>,
    weights: Weights,
    /// normalized name -> (source index for .bin shards, original name)
    names: BTreeMap<String, (usize, String)>,
}

fn read_json(path: &Path) -> Result<serde_json::Value, ConvertError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConvertError::Io(path.display().to_string(), e))?;
    serde_json::from_str(&text).map_err(|e| ConvertError::Config(format!("{}: {e}", path.display())))
}

fn shard_files(index: &Path) -> Result<Vec<PathBuf>, ConvertError> {
    let v = read_json(index)?;
    let map = v
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| ConvertError::Config(format!("{}: no weight_map", index.display())))?;
    let files: BTreeSet<&str> = map.values().filter_map(|f| f.as_str()).collect();
    let dir = index.parent().unwrap_or(Path::new("."));
    Ok(files.into_iter().map(|f| dir.join(f)).collect())
}

impl HfCheckpoint {
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, ConvertError> {
        let dir = dir.as_ref().to_path_buf();
        let config = HfBloomConfig::from_json(&read_json(&dir.join("config.json"))?)?;
        let tok_path = dir.join("tokenizer.json");
        let tokenizer_json = std::fs::read_to_string(&tok_path)
            .map_err(|e| ConvertError::Io(tok_path.display().to_string(), e))?;
        let optional = |f: &str| {
            let p = dir.join(f);
            p.exists().then(|| read_json(&p)).transpose()
        };
        let tokenizer_config = optional("tokenizer_config.json")?;
        let special_tokens_map = optional("special_tokens_map.json")?;

        let st_single = dir.join("model.safetensors");
        let st_index = dir.join("model.safetensors.index.json");
        let bin_single = dir.join("pytorch_model.bin");
        let bin_index = dir.join("pytorch_model.bin.index.json");
        let wrap = |e: candle_core::Error| ConvertError::Weights(e.to_string());
        let (weights, raw_names): (Weights, Vec<(usize, String)>) = if st_single.exists() || st_index.exists() {
            let files = if st_index.exists() { shard_files(&st_index)? } else { vec![st_single] };
            // SAFETY: read-only mapping of checkpoint files that we do not modify.
            let st = unsafe { MmapedSafetensors::multi(&files) }.map_err(wrap)?;
            let names = st.tensors().into_iter().map(|(n, _)| (0, n)).collect();
            (Weights::Safetensors(st), names)
        } else if bin_single.exists() || bin_index.exists() {
            let files = if bin_index.exists() { shard_files(&bin_index)? } else { vec![bin_single] };
            let mut shards = Vec::new();
            let mut names = Vec::new();
            for (i, f) in files.iter().enumerate() {
                let p = PthTensors::new(f, None).map_err(wrap)?;
                names.extend(p.tensor_infos().keys().map(|n| (i, n.clone())));
                shards.push(p);
            }
            (Weights::Pth(shards), names)
        } else {
            return Err(ConvertError::Config(format!(
                "{}: no model.safetensors(.index.json) or pytorch_model.bin(.index.json)",
                dir.display()
            )));
        };
        let names = raw_names
            .into_iter()
            .map(|(i, n)| (n.strip_prefix("transformer.").unwrap_or(&n).to_string(), (i, n)))
            .collect();
        Ok(Self { dir, config, tokenizer_json, tokenizer_config, special_tokens_map, weights, names })
    }

    pub fn has(&self, name: &str) -> bool {
        self.names.contains_key(name)
    }

    /// Loads the tensor (normalized name) as f32 on the CPU, checking its shape.
    pub fn load(&self, name: &str, shape: &[usize]) -> Result<Tensor, ConvertError> {
        let (shard, orig) =
            self.names.get(name).ok_or_else(|| ConvertError::Weights(format!("checkpoint lacks tensor '{name}'")))?;
        let wrap = |e: candle_core::Error| ConvertError::Weights(format!("{name}: {e}"));
        let t = match &self.weights {
            Weights::Safetensors(st) => st.load(orig, &Device::Cpu).map_err(wrap)?,
            Weights::Pth(shards) => shards[*shard]
                .get(orig)
                .map_err(wrap)?
                .ok_or_else(|| ConvertError::Weights(format!("checkpoint lacks tensor '{name}'")))?,
        };
        if t.dims() != shape {
            return Err(ConvertError::Weights(format!("{name}: shape {:?}, config implies {shape:?}", t.dims())));
        }
        t.to_dtype(DType::F32).map_err(wrap)
    }
}
