// Globals the console defines for its tests.
interface Window {
  /** Every chart on the page, by name: its x values and each series' values, as drawn. */
  __agentrlCharts: Record<string, { x: number[]; series: Record<string, (number | null)[]>; boundary?: number | null }>;
}
