//! The tokenizer, twice: `tokenizer.ggml.*` (what llama.cpp reads: a GPT-2 style BPE with
//! BLOOM's pre-tokenizer) and `tokenizer.huggingface.json` (what the `tokenizers` crate
//! reads, byte for byte the checkpoint's tokenizer.json).

use super::checkpoint::HfCheckpoint;
use super::ConvertError;
use seqgpt_engine::arch::key;
use seqgpt_engine::gguf::{MetadataValue, ValueType};

/// llama.cpp's token types.
const NORMAL: i32 = 1;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const UNUSED: i32 = 5;

pub fn tokenizer_metadata(ckpt: &HfCheckpoint, vocab_rows: usize) -> Result<Vec<(String, MetadataValue)>, ConvertError> {
    let tok: serde_json::Value = serde_json::from_str(&ckpt.tokenizer_json)
        .map_err(|e| ConvertError::Tokenizer(format!("tokenizer.json: {e}")))?;
    let model = tok.get("model").ok_or_else(|| ConvertError::Tokenizer("tokenizer.json has no model".into()))?;
    if model.get("type").and_then(|t| t.as_str()) != Some("BPE") {
        return Err(ConvertError::Tokenizer("only BPE tokenizers (BLOOM's kind) are supported".into()));
    }
    let vocab = model
        .get("vocab")
        .and_then(|v| v.as_object())
        .ok_or_else(|| ConvertError::Tokenizer("tokenizer.json: model.vocab missing".into()))?;

    let mut tokens: Vec<Option<String>> = vec![None; vocab_rows];
    let mut types = vec![UNUSED; vocab_rows];
    let mut place = |id: u64, text: &str, ty: i32| -> Result<(), ConvertError> {
        let slot = tokens.get_mut(id as usize).ok_or_else(|| {
            ConvertError::Tokenizer(format!("token id {id} ('{text}') is beyond the {vocab_rows} embedding rows"))
        })?;
        *slot = Some(text.to_string());
        types[id as usize] = ty;
        Ok(())
    };
    for (text, id) in vocab {
        let id = id.as_u64().ok_or_else(|| ConvertError::Tokenizer(format!("vocab entry '{text}' has no id")))?;
        place(id, text, NORMAL)?;
    }
    let mut special_ids = std::collections::BTreeMap::new();
    for added in tok.get("added_tokens").and_then(|a| a.as_array()).into_iter().flatten() {
        let (Some(id), Some(content)) = (added.get("id").and_then(|i| i.as_u64()), added.get("content").and_then(|c| c.as_str())) else {
            continue;
        };
        let special = added.get("special").and_then(|s| s.as_bool()).unwrap_or(false);
        place(id, content, if special { CONTROL } else { USER_DEFINED })?;
        special_ids.insert(content.to_string(), id as u32);
    }
    // Rows past the tokenizer (BLOOM pads 250680 tokens to 250880 rows) get llama.cpp's names.
    let tokens: Vec<MetadataValue> = tokens
        .into_iter()
        .enumerate()
        .map(|(i, t)| MetadataValue::String(t.unwrap_or_else(|| format!("[PAD{i}]"))))
        .collect();

    let merges: Vec<MetadataValue> = model
        .get("merges")
        .and_then(|m| m.as_array())
        .into_iter()
        .flatten()
        .filter_map(|m| match m {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Array(pair) if pair.len() == 2 => {
                Some(format!("{} {}", pair[0].as_str()?, pair[1].as_str()?))
            }
            _ => None,
        })
        .map(MetadataValue::String)
        .collect();

    // Special ids: tokenizer_config/special_tokens_map name them; config.json has ids too.
    let named = |key: &str| -> Option<u32> {
        [&ckpt.tokenizer_config, &ckpt.special_tokens_map].iter().find_map(|src| {
            let v = src.as_ref()?.get(key)?;
            let s = v.as_str().or_else(|| v.get("content").and_then(|c| c.as_str()))?;
            special_ids.get(s).copied().or_else(|| vocab.get(s).and_then(|i| i.as_u64()).map(|i| i as u32))
        })
    };
    let cfg = &ckpt.config;
    let mut meta: Vec<(String, MetadataValue)> = vec![
        (key::TOKENIZER_MODEL.into(), "gpt2".into()),
        (key::TOKENIZER_PRE.into(), "bloom".into()),
        (key::TOKENS.into(), MetadataValue::Array(ValueType::String, tokens)),
        (
            key::TOKEN_TYPE.into(),
            MetadataValue::Array(ValueType::I32, types.into_iter().map(MetadataValue::I32).collect()),
        ),
        (key::MERGES.into(), MetadataValue::Array(ValueType::String, merges)),
    ];
    for (k, id) in [
        (key::BOS_ID, named("bos_token").or(cfg.bos_token_id)),
        (key::EOS_ID, named("eos_token").or(cfg.eos_token_id)),
        (key::UNKNOWN_ID, named("unk_token")),
        (key::PADDING_ID, named("pad_token").or(cfg.pad_token_id)),
    ] {
        if let Some(id) = id {
            meta.push((k.to_string(), MetadataValue::U32(id)));
        }
    }
    // BLOOM's tokenizer adds no BOS/EOS; say so rather than leave it to reader defaults.
    meta.push((key::ADD_BOS.into(), false.into()));
    meta.push((key::ADD_EOS.into(), false.into()));
    meta.push((key::HF_TOKENIZER_JSON.into(), ckpt.tokenizer_json.clone().into()));
    Ok(meta)
}
