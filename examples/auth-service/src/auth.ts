// A small module for the bundled demo pipelines to plan, change and review.
export const auth = (user: string, password: string): boolean =>
  user.length > 0 && password.length >= 8;

export const token = (user: string): string => `token-${user}-${Date.now()}`;
