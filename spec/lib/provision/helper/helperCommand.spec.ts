import { HelperCommandError, splitHelperCommand } from '../../../../lib/provision/helper/helperCommand';

describe('splitHelperCommand (go-shellquote semantics)', () => {
  it.each([
    ['/usr/local/bin/helper', ['/usr/local/bin/helper']],
    ['  /bin/h   a  b ', ['/bin/h', 'a', 'b']],
    ['/bin/h "two words" \'single $quoted\'', ['/bin/h', 'two words', 'single $quoted']],
    ['/bin/h c\\ d \\"e\\"', ['/bin/h', 'c d', '"e"']],
    ['"/path with space/h" --flag=1', ['/path with space/h', '--flag=1']],
    // No expansion of any kind, and nothing is a shell operator.
    [
      '/bin/h $HOME ${X} ~/x *.rb a|b c;d e&&f >out <in (g) #h',
      ['/bin/h', '$HOME', '${X}', '~/x', '*.rb', 'a|b', 'c;d', 'e&&f', '>out', '<in', '(g)', '#h'],
    ],
    ['/bin/h "$HOME `date`"', ['/bin/h', '$HOME `date`']],
    // Inside double quotes a backslash escapes only $ ` " \ and newline.
    ['/bin/h "a\\$b \\"q\\" \\\\ \\n"', ['/bin/h', 'a$b "q" \\ \\n']],
    ["/bin/h 'it''s'", ['/bin/h', 'its']],
    ['/bin/h a\\\nb', ['/bin/h', 'ab']],
    ['/bin/h \'\' ""', ['/bin/h', '', '']],
  ])('%j', (command, argv) => {
    expect(splitHelperCommand(command)).toEqual(argv);
  });

  it.each([
    ['', 'cannot parse helper command: empty'],
    ['   \t ', 'cannot parse helper command: empty'],
    ["/bin/h 'open", 'cannot parse helper command: Unterminated single-quoted string'],
    ['/bin/h "open', 'cannot parse helper command: Unterminated double-quoted string'],
    ['/bin/h trailing\\', 'cannot parse helper command: Unterminated backslash-escape'],
  ])('refuses %j: %s', (command, message) => {
    expect(() => splitHelperCommand(command)).toThrow(new HelperCommandError(message.replace('cannot parse helper command: ', '')));
  });
});
