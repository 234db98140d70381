//! What a provider call costs, from the token usage it reports and the tenant's price table.

use serde::{Deserialize, Serialize};

use super::Price;

/// Tokens one call used, as the provider reports them.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt (input) tokens.
    pub prompt_tokens: u64,
    /// Completion (output) tokens.
    pub completion_tokens: u64,
}

impl Usage {
    /// The sum of two usages.
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
        }
    }

    /// The cost at `price`; `None` for an unpriced model.
    #[must_use]
    pub fn cost(self, price: Option<&Price>) -> Option<f64> {
        price.map(|p| {
            (self.prompt_tokens as f64 * p.input_per_million
                + self.completion_tokens as f64 * p.output_per_million)
                / 1e6
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_tokens_times_the_price_per_million() {
        let usage = Usage {
            prompt_tokens: 1_500,
            completion_tokens: 200,
        }
        .plus(Usage {
            prompt_tokens: 500,
            completion_tokens: 0,
        });
        let price = Price {
            input_per_million: 2.0,
            output_per_million: 8.0,
        };
        let cost = usage.cost(Some(&price)).expect("priced");
        assert!((cost - (2_000.0 * 2.0 + 200.0 * 8.0) / 1e6).abs() < 1e-12);
        assert_eq!(usage.cost(None), None);
    }
}
