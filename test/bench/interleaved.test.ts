import { describe, expect, it } from "vitest";
import { medianInterval, pairedRatioOf } from "../../bench/interleaved.js";

/** 1 … n in a scrambled order: the k-th smallest value is k. */
const scrambled = (n: number): number[] =>
  Array.from({ length: n }, (_, i) => ((i * 7919) % n) + 1);

describe("the confidence interval for the median of the rounds' ratios", () => {
  it("is the order statistics the binomial tables give at 95 %", () => {
    // Published values: n = 9 → 2nd and 8th (96.1 %); n = 100 → 40th and 61st (96.5 %).
    expect(medianInterval(scrambled(9))).toEqual({ low: 2, high: 8, confidence: 0.95 });
    expect(medianInterval(scrambled(100))).toEqual({ low: 40, high: 61, confidence: 0.95 });
  });

  it("holds the middle 81 of 1,601 rounds (95.4 %)", () => {
    const { low, high } = medianInterval(scrambled(1601));
    expect([low, high]).toEqual([761, 841]);
  });

  it("spans every value when there are too few for any narrower one, with that range's confidence", () => {
    expect(medianInterval([3, 1, 2, 5, 4])).toEqual({ low: 1, high: 5, confidence: 0.9375 });
  });
});

describe("the paired rounds' ratio", () => {
  it("cancels what running first does: a round and the next, in the other order, as one", () => {
    // The candidate reads 1.0 at heart; whichever side runs second is 10 % slower.
    const rounds = Array.from({ length: 9 }, (_, round) => (round % 2 === 0 ? 1.1 : 1 / 1.1));
    const paired = pairedRatioOf(rounds);
    expect(paired.median).toBeCloseTo(1, 12);
    expect(paired.low).toBeCloseTo(1, 12);
    expect(paired.high).toBeCloseTo(1, 12);
    expect(medianInterval(rounds).high).toBeCloseTo(1.1, 12);
  });
});
