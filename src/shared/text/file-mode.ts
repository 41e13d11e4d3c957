// A file's mode in messages: the permission and special bits as four octal digits, the way chmod
// takes them and ls's users read them (0644, 2775).

/** `mode`'s low twelve bits as four octal digits. */
export function fileModeText(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}
