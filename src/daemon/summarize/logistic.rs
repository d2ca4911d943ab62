//! A standardized logistic model, as `benches/fit_scorer.py` writes one: the features'
//! names, their training mean and spread, a weight for each and a bias. The sentence scorer
//! (`scorer.json`) and the key-term model (`keyterms.json`) are both of this form.

use serde::Deserialize;

/// A fitted model; [`Logistic::from_json`] checks it against the features it must have.
#[derive(Debug, Clone, Deserialize)]
pub struct Logistic {
    pub features: Vec<String>,
    pub mean: Vec<f64>,
    pub scale: Vec<f64>,
    pub weights: Vec<f64>,
    pub bias: f64,
}

impl Logistic {
    /// Reads a model of the features `names`; `what` names the file in an error, which says
    /// what does not match.
    pub fn from_json(text: &str, names: &[&str], what: &str) -> Result<Self, String> {
        let m: Logistic = serde_json::from_str(text).map_err(|e| format!("{what}: {e}"))?;
        if m.features != names {
            return Err(format!("{what}: features {:?}, expected {:?}", m.features, names));
        }
        let n = names.len();
        if [m.mean.len(), m.scale.len(), m.weights.len()] != [n; 3] || m.scale.iter().any(|&x| !(x > 0.0)) {
            return Err(format!("{what}: mean, scale and weights need one finite value per feature (scale > 0)"));
        }
        Ok(m)
    }

    /// The probability the model gives features `x` (in its features' order); the features
    /// listed in `off` are held at their mean (ablation).
    pub fn probability(&self, x: &[f64], off: &[usize]) -> f64 {
        let mut z = self.bias;
        for (k, &v) in x.iter().enumerate().take(self.weights.len()) {
            if !off.contains(&k) {
                z += self.weights[k] * (v - self.mean[k]) / self.scale[k];
            }
        }
        1.0 / (1.0 + (-z).exp())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_checked_against_its_features() {
        let ok = r#"{"features":["a","b"],"mean":[0,1],"scale":[1,2],"weights":[1,-1],"bias":0.5}"#;
        let m = Logistic::from_json(ok, &["a", "b"], "test model").unwrap();
        let z: f64 = 0.5 + 1.0 * 2.0 - (3.0 - 1.0) / 2.0;
        assert!((m.probability(&[2.0, 3.0], &[]) - 1.0 / (1.0 + (-z).exp())).abs() < 1e-15);
        // Held at its mean, the second feature adds nothing.
        assert!((m.probability(&[2.0, 3.0], &[1]) - 1.0 / (1.0 + (-2.5f64).exp())).abs() < 1e-15);
        assert!(Logistic::from_json(ok, &["a"], "test model").unwrap_err().contains("expected"));
        let zero_scale = ok.replace("[1,2]", "[1,0]");
        assert!(Logistic::from_json(&zero_scale, &["a", "b"], "test model").unwrap_err().contains("scale > 0"));
        assert!(Logistic::from_json("{", &["a"], "test model").unwrap_err().starts_with("test model:"));
    }
}
