//! BLOOM in GGUF: every tensor name and metadata key, in one table, spelled as llama.cpp spells
//! them (its llama-arch table, architecture `bloom`). The loader, the converter, quantize and
//! `seqgpt info` name tensors and keys only through here; each tensor also names the Hugging
//! Face checkpoint tensor it is converted from.

/// `general.architecture` of the files this engine reads.
pub const ARCH: &str = "bloom";

/// Metadata keys.
pub mod key {
    pub const ARCHITECTURE: &str = "general.architecture";
    pub const NAME: &str = "general.name";
    pub const FILE_TYPE: &str = "general.file_type";
    pub const QUANTIZATION_VERSION: &str = "general.quantization_version";
    /// The container's, not the architecture's: the tensor data alignment (default 32).
    pub const ALIGNMENT: &str = "general.alignment";

    pub const CONTEXT_LENGTH: &str = "bloom.context_length";
    pub const EMBEDDING_LENGTH: &str = "bloom.embedding_length";
    pub const FEED_FORWARD_LENGTH: &str = "bloom.feed_forward_length";
    pub const BLOCK_COUNT: &str = "bloom.block_count";
    pub const HEAD_COUNT: &str = "bloom.attention.head_count";
    pub const HEAD_COUNT_KV: &str = "bloom.attention.head_count_kv";
    pub const LAYER_NORM_EPSILON: &str = "bloom.attention.layer_norm_epsilon";

    pub const TOKENIZER_MODEL: &str = "tokenizer.ggml.model";
    pub const TOKENIZER_PRE: &str = "tokenizer.ggml.pre";
    pub const TOKENS: &str = "tokenizer.ggml.tokens";
    pub const TOKEN_TYPE: &str = "tokenizer.ggml.token_type";
    pub const MERGES: &str = "tokenizer.ggml.merges";
    pub const BOS_ID: &str = "tokenizer.ggml.bos_token_id";
    pub const EOS_ID: &str = "tokenizer.ggml.eos_token_id";
    pub const UNKNOWN_ID: &str = "tokenizer.ggml.unknown_token_id";
    pub const PADDING_ID: &str = "tokenizer.ggml.padding_token_id";
    pub const ADD_BOS: &str = "tokenizer.ggml.add_bos_token";
    pub const ADD_EOS: &str = "tokenizer.ggml.add_eos_token";
    /// The Hugging Face tokenizer.json, whole (what the tokenizer is built from).
    pub const HF_TOKENIZER_JSON: &str = "tokenizer.huggingface.json";
}

/// A tensor of the architecture; those of a block exist once per block (`blk.N.`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tensor {
    TokenEmbd,
    TokenEmbdNorm,
    AttnNorm,
    AttnQkv,
    AttnOutput,
    FfnNorm,
    FfnUp,
    FfnDown,
    OutputNorm,
    /// The output head; absent when tied to `token_embd` (SeqGPT, most BLOOMs).
    Output,
}

/// A tensor's weight or its bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    Weight,
    Bias,
}

impl Part {
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Weight => "weight",
            Part::Bias => "bias",
        }
    }
}

struct Entry {
    tensor: Tensor,
    gguf: &'static str,
    hf: &'static str,
    in_block: bool,
    has_bias: bool,
}

/// The table, in file order (the order llama.cpp's converter writes).
const TABLE: [Entry; 10] = [
    Entry { tensor: Tensor::TokenEmbd, gguf: "token_embd", hf: "word_embeddings", in_block: false, has_bias: false },
    Entry { tensor: Tensor::TokenEmbdNorm, gguf: "token_embd_norm", hf: "word_embeddings_layernorm", in_block: false, has_bias: true },
    Entry { tensor: Tensor::AttnNorm, gguf: "attn_norm", hf: "input_layernorm", in_block: true, has_bias: true },
    Entry { tensor: Tensor::AttnQkv, gguf: "attn_qkv", hf: "self_attention.query_key_value", in_block: true, has_bias: true },
    Entry { tensor: Tensor::AttnOutput, gguf: "attn_output", hf: "self_attention.dense", in_block: true, has_bias: true },
    Entry { tensor: Tensor::FfnNorm, gguf: "ffn_norm", hf: "post_attention_layernorm", in_block: true, has_bias: true },
    Entry { tensor: Tensor::FfnUp, gguf: "ffn_up", hf: "mlp.dense_h_to_4h", in_block: true, has_bias: true },
    Entry { tensor: Tensor::FfnDown, gguf: "ffn_down", hf: "mlp.dense_4h_to_h", in_block: true, has_bias: true },
    Entry { tensor: Tensor::OutputNorm, gguf: "output_norm", hf: "ln_f", in_block: false, has_bias: true },
    Entry { tensor: Tensor::Output, gguf: "output", hf: "lm_head", in_block: false, has_bias: false },
];

/// The tensors of one block, in file order.
pub const BLOCK: [Tensor; 6] =
    [Tensor::AttnNorm, Tensor::AttnQkv, Tensor::AttnOutput, Tensor::FfnNorm, Tensor::FfnUp, Tensor::FfnDown];

impl Tensor {
    /// Every tensor, in file order.
    pub fn all() -> impl Iterator<Item = Tensor> {
        TABLE.iter().map(|e| e.tensor)
    }

    fn entry(self) -> &'static Entry {
        TABLE.iter().find(|e| e.tensor == self).expect("every tensor is in the table")
    }

    /// The GGUF name without block prefix or part: `attn_qkv`.
    pub fn base(self) -> &'static str {
        self.entry().gguf
    }

    /// Whether it exists once per block.
    pub fn in_block(self) -> bool {
        self.entry().in_block
    }

    /// Whether it has a bias beside its weight (BLOOM's norms and linears do; the embedding
    /// and the head do not).
    pub fn has_bias(self) -> bool {
        self.entry().has_bias
    }

    /// Whether its weight is a matrix (a quantizable 2-D weight), not a norm's vector.
    pub fn is_matrix(self) -> bool {
        !matches!(self, Tensor::TokenEmbdNorm | Tensor::AttnNorm | Tensor::FfnNorm | Tensor::OutputNorm)
    }

    /// Its parts, weight first.
    pub fn parts(self) -> &'static [Part] {
        if self.has_bias() {
            &[Part::Weight, Part::Bias]
        } else {
            &[Part::Weight]
        }
    }

    /// The GGUF tensor name: `token_embd.weight`, `blk.3.attn_qkv.bias`. `block` is ignored
    /// for tensors outside the blocks.
    pub fn name(self, block: usize, part: Part) -> String {
        if self.in_block() {
            format!("blk.{block}.{}.{}", self.base(), part.as_str())
        } else {
            format!("{}.{}", self.base(), part.as_str())
        }
    }

    /// The weight of a tensor outside the blocks: `token_embd.weight`.
    pub fn weight(self) -> String {
        self.name(0, Part::Weight)
    }

    /// The name inside a block, after `blk.N.`: `attn_qkv.weight`.
    pub fn block_suffix(self, part: Part) -> String {
        format!("{}.{}", self.base(), part.as_str())
    }

    /// The Hugging Face checkpoint's name (without the `transformer.` prefix):
    /// `word_embeddings.weight`, `h.3.self_attention.query_key_value.bias`.
    pub fn hf_name(self, block: usize, part: Part) -> String {
        if self.in_block() {
            format!("h.{block}.{}.{}", self.entry().hf, part.as_str())
        } else {
            format!("{}.{}", self.entry().hf, part.as_str())
        }
    }
}

/// A GGUF tensor name read back: the tensor, its block (0 outside the blocks) and its part.
pub fn parse(name: &str) -> Option<(Tensor, usize, Part)> {
    let (stem, part) = name.rsplit_once('.')?;
    let part = match part {
        "weight" => Part::Weight,
        "bias" => Part::Bias,
        _ => return None,
    };
    let (block, base) = match stem.strip_prefix("blk.") {
        Some(rest) => {
            let (i, base) = rest.split_once('.')?;
            (Some(i.parse::<usize>().ok()?), base)
        }
        None => (None, stem),
    };
    let e = TABLE.iter().find(|e| e.gguf == base && e.in_block == block.is_some())?;
    (part == Part::Weight || e.has_bias).then_some((e.tensor, block.unwrap_or(0), part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in Tensor::all() {
            for &p in t.parts() {
                let name = t.name(7, p);
                let block = if t.in_block() { 7 } else { 0 };
                assert_eq!(parse(&name), Some((t, block, p)), "{name}");
            }
        }
        assert_eq!(Tensor::AttnQkv.name(3, Part::Bias), "blk.3.attn_qkv.bias");
        assert_eq!(Tensor::TokenEmbd.weight(), "token_embd.weight");
        assert_eq!(Tensor::FfnDown.hf_name(2, Part::Weight), "h.2.mlp.dense_4h_to_h.weight");
        assert_eq!(Tensor::Output.hf_name(0, Part::Weight), "lm_head.weight");
        assert_eq!(parse("output.bias"), None);
        assert_eq!(parse("blk.x.attn_qkv.weight"), None);
        assert_eq!(parse("attn_qkv.weight"), None);
        assert_eq!(parse("blk.1.token_embd.weight"), None);
    }
}
