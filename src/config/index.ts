/** The configuration module: the only code that reads process.env. */
export * from './defaults';
export * from './env';
