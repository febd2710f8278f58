// Orientation markers from DICOM ImageOrientationPatient (row and column direction cosines, LPS).
// A direction is named by its dominant axes: +x left (L), +y posterior (P), +z head (H).

export type Letters = { left: string; right: string; top: string; bottom: string };

function name(v: number[]): string {
  const axes: [number, string, string][] = [
    [v[0], "L", "R"],
    [v[1], "P", "A"],
    [v[2], "H", "F"],
  ];
  return axes
    .filter(([c]) => Math.abs(c) > 0.25)
    .sort((a, b) => Math.abs(b[0]) - Math.abs(a[0]))
    .map(([c, pos, neg]) => (c > 0 ? pos : neg))
    .join("");
}

export function orientationLetters(iop: number[] | null): Letters | null {
  if (!iop || iop.length !== 6) return null;
  const row = iop.slice(0, 3);
  const col = iop.slice(3, 6);
  const neg = (v: number[]) => v.map((x) => -x);
  return { right: name(row), left: name(neg(row)), bottom: name(col), top: name(neg(col)) };
}
