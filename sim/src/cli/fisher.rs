//! `leasesim fisher K1/N1 K2/N2`: Fisher's exact two-sided p-value for two
//! rates, so every comparison of two rates in the study report can be
//! rerun from the counts it quotes (the test itself lives in
//! study/significance.rs, once).

use clap::Args;

use crate::study::significance::fisher_exact_two_sided;

#[derive(Args, Debug)]
pub struct FisherArgs {
    /// The first rate, as K/N (K events in N runs).
    #[arg(value_parser = parse_rate)]
    pub first: (u64, u64),
    /// The second rate, as K/N.
    #[arg(value_parser = parse_rate)]
    pub second: (u64, u64),
}

/// `K/N` with K ≤ N and N > 0.
pub fn parse_rate(text: &str) -> Result<(u64, u64), String> {
    let (k, n) = text.split_once('/').ok_or_else(|| format!("`{text}`: expected K/N, e.g. 7/60"))?;
    let k: u64 = k.trim().parse().map_err(|_| format!("`{text}`: K (`{k}`) is not a whole number"))?;
    let n: u64 = n.trim().parse().map_err(|_| format!("`{text}`: N (`{n}`) is not a whole number"))?;
    if n == 0 || k > n {
        return Err(format!("`{text}`: need 0 ≤ K ≤ N and N > 0"));
    }
    Ok((k, n))
}

pub fn fisher_command(args: &FisherArgs) -> i32 {
    let ((k1, n1), (k2, n2)) = (args.first, args.second);
    let p = fisher_exact_two_sided(k1, n1, k2, n2);
    // Tiny p-values in scientific notation, so none prints as 0.
    let shown = if p < 1e-4 { format!("{p:.2e}") } else { format!("{p:.6}") };
    println!("{k1}/{n1} vs {k2}/{n2}: Fisher's exact two-sided p = {shown}");
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_bad_ones_say_what_is_wrong() {
        assert_eq!(parse_rate("7/60"), Ok((7, 60)));
        assert!(parse_rate("7").unwrap_err().contains("expected K/N"));
        assert!(parse_rate("x/60").unwrap_err().contains("K (`x`)"));
        assert!(parse_rate("61/60").unwrap_err().contains("K ≤ N"));
        assert!(parse_rate("0/0").unwrap_err().contains("N > 0"));
    }
}
